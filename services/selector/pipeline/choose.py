"""Choice: which candidates the reply gives, in order: the score floor, each part's quota, the top by the
expected score and the exploration slots by the draw, then the pins, the top tool's related tools and the limit."""

from dataclasses import dataclass, field

import numpy as np

from toolsel.contracts import SelectRequest
from toolsel.contracts.selection import SELECTED_MAX
from toolsel.services.selector import retrieval, stages
from toolsel.services.selector.pipeline import pins
from toolsel.services.selector.pipeline.candidates import Candidates
from toolsel.services.selector.pipeline.held import Held
from toolsel.services.selector.pipeline.rerank import Scored
from toolsel.services.selector.pipeline.visibility import Visible


@dataclass(frozen=True)
class Choice:
    final: stages.Rows
    """The catalog rows the reply gives, in order."""
    explored: stages.Rows
    """Those of them that were exploration picks."""
    related: dict[int, int]
    """Rows added as the top tool's related tools -> the top tool's row."""
    pinned: stages.Rows
    """Those of them shown as pins (an unscoped pin, or a scoped one whose scope holds)."""
    needs: list[int | None]
    """Each final row's part of a compound query (an index into the parts), None where only the whole query
    retrieved it."""
    over_budget: stages.Rows = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """Rows the answer would have held but for the request's token budget, in rank order."""

    def kept(self, keep: stages.Mask) -> "Choice":
        """This choice with only the final rows ``keep`` marks (aligned with ``final``); the rest are left out."""
        final = self.final[keep]
        return Choice(
            final,
            self.explored[stages.member(self.explored, final)],
            {row: top for row, top in self.related.items() if row in final},
            self.pinned[stages.member(self.pinned, final)],
            [need for need, kept in zip(self.needs, keep.tolist(), strict=True) if kept],
            self.over_budget,
        )


def run(held: Held, request: SelectRequest, visible: Visible, found: Candidates, scored: Scored, k: int) -> Choice:
    """``k``: how many tools before pins (the ``count`` stage)."""
    rows = found.rows
    related: dict[int, int] = {}
    shown = rows[:0]
    if not request.rerank:
        final, explored = rows[found.merged[:k]], rows[:0]
    else:
        chosen, explored = (rows[picked] for picked in _ranked(held, request, found, scored, k))
        shown = pins.shown(held, request, visible.pinned, found, scored)
        final = stages.inject_pins(chosen, shown, held.catalog.pin_weight, SELECTED_MAX - chosen.size)
        if chosen.size:
            final, related = _with_related(held, final, int(chosen[0]), visible.allowed, k)
    pinned = final[stages.member(final, shown)]
    choice = Choice(final, explored, related, pinned, retrieval.needs(found.at(final), found.rankings[1:]))
    if request.filters.min_score is not None:  # a bound on every tool returned: pins and related tools too
        choice = choice.kept(scored.confidence[found.at(choice.final)] >= request.filters.min_score)
    if request.max_tools is not None:  # pins first, then the ranking, then related tools
        return choice.kept(np.arange(choice.final.size) < request.max_tools)
    return choice


def _ranked(
    held: Held, request: SelectRequest, found: Candidates, scored: Scored, k: int
) -> tuple[stages.Rows, stages.Rows]:
    """The chosen positions in order and those that were exploration picks."""
    s = held.settings
    rankings, candidates = found.rankings, found.merged
    if request.filters.min_score is not None:
        keep = scored.confidence >= request.filters.min_score
        rankings = [r[keep[r]] for r in rankings]
        candidates = candidates[keep[candidates]]
    if len(rankings) > 1:  # each need keeps its quota of the slots (seed 002), in its own relevance's order
        own = [stages.rescored(scored.score, scored.relevance, q.relevance) for q in found.per_query]
        ordered = [r[np.argsort(-o[r], kind="stable")] for r, o in zip(rankings, own, strict=True)]
        candidates = retrieval.round_robin(ordered, s.retrieval_candidates)
        exploit = -np.arange(found.rows.size, dtype=np.float64)
        exploit[candidates] = -np.arange(candidates.size)
    else:
        exploit = scored.score
    if s.rerank_sampling == "all":
        return stages.choose(candidates, scored.explore, scored.explore, k, 0)
    return _explore(held, request, found, scored, candidates, exploit, k)


def _explore(
    held: Held,
    request: SelectRequest,
    found: Candidates,
    scored: Scored,
    candidates: stages.Rows,
    exploit: stages.Scores,
    k: int,
) -> tuple[stages.Rows, stages.Rows]:
    """The top by the expected score and the exploration slots by the draw; with a chance that falls as this
    context's top tools gather evidence, a slot reaches past the candidates to ``exploration_depth`` (the rows
    hold that depth of the ranking then), to the tools nothing was learnt of in the scope when there are any
    there: one that already learnt has its learnt vector to be found by."""
    s, rng = held.settings, held.rng
    slots = s.exploration_slots if request.explore else 0
    if rng is None or not slots or not found.explores_deep:
        return stages.choose(candidates, exploit, scored.explore, k, slots)
    top = candidates[np.argsort(-exploit[candidates], kind="stable")][:k]
    observed = float(scored.evidence(s.prior_alpha, s.prior_beta)[top].sum())
    beyond = stages.beyond_candidates(scored.relevance, found.in_pool, candidates, s.exploration_depth)
    if request.filters.min_score is not None:
        beyond = beyond[scored.confidence[beyond] >= request.filters.min_score]
    if held.usage is not None and (untaught := beyond[~stages.member(found.rows[beyond], held.usage.rows)]).size:
        beyond = untaught
    if beyond.size == 0 or rng.random() >= stages.deep_exploration_chance(observed):
        return stages.choose(candidates, exploit, scored.explore, k, slots)
    deep = stages.deep_score(scored.breakdown["thompson"], scored.relevance, found.relevance_top)
    return stages.choose(candidates, exploit, deep, k, slots, beyond)


def _with_related(
    held: Held, final: stages.Rows, top: int, allowed: stages.Mask, k: int
) -> tuple[stages.Rows, dict[int, int]]:
    """Seed 003: the top tool's related tools follow it into room the ranking left (row -> top row)."""
    taken = set(final.tolist())
    extra = [r for r in held.catalog.related(top) if allowed[r] and r not in taken][: max(k - final.size, 0)]
    return np.concatenate([final, np.array(extra, dtype=np.int64)]), dict.fromkeys(extra, top)
