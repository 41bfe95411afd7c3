"""What a reply advises when nothing fits (seed 002): with candidates left, "none of these" and ask for more; with
none left, create a custom tool, and how."""

NONE_OF_THESE = (
    "None of these is likely to fit: say so (a review with none_of_these, which rejects them for the session) and "
    "ask again for further options, or rephrase the need."
)
CREATE_A_TOOL = (
    "No tool in the catalog fits and none is left to offer: create a custom tool. Declare it in a plugin (a "
    "PluginSync: its name, a description of what it does, its parameters as a JSON schema and a few example "
    "queries) and register it with `toolsel sync PLUGIN.json`; it is offered once the indexer has embedded it."
)


def advice(no_match: bool, remaining: int) -> str:
    """``remaining``: the candidates retrieval found that the reply does not hold. Empty when something fits."""
    if not no_match:
        return ""
    return NONE_OF_THESE if remaining > 0 else CREATE_A_TOOL
