"""What a reply advises when nothing it gives fits: when the token budget left out what fits, to ask with a larger
one; when nothing fits (seed 002), with candidates left "none of these" and ask for more, with none left, create a
custom tool, and how."""

NONE_OF_THESE = (
    "None of these is likely to fit: say so (a review with none_of_these, which rejects them for the session) and "
    "ask again for further options, or rephrase the need."
)
CREATE_A_TOOL = (
    "No tool in the catalog fits and none is left to offer: create a custom tool. Declare it in a plugin (a "
    "PluginSync: its name, a description of what it does, its parameters as a JSON schema and a few example "
    "queries) and register it with `toolsel sync PLUGIN.json`; it is offered once the indexer has embedded it."
)


OVER_BUDGET = (
    "The tools that fit were left out for the token budget (over_budget names them): ask again with a larger "
    "token_budget, or with fewer tools pinned or asked for."
)


def advice(no_match: bool, remaining: int, fits_over_budget: bool = False) -> str:
    """``remaining``: the candidates retrieval found that the reply does not hold; ``fits_over_budget``: what fits
    was left out for the token budget, and nothing the reply holds fits. Empty when something given fits."""
    if fits_over_budget:
        return OVER_BUDGET
    if not no_match:
        return ""
    return NONE_OF_THESE if remaining > 0 else CREATE_A_TOOL
