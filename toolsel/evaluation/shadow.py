"""The shadow test of a tune (pure): the held-back queries ranked over the catalog each one's tenant sees, by the
current model's vectors and by the candidate's, scored alike; the candidate replaces the current model only when it
wins by the margin."""

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from toolsel.evaluation.metrics import DEPTH, ndcg_at, recall_at
from toolsel.runtime import load_model
from toolsel.settings import Settings
from toolsel.tuning.card import read_card, write_card
from toolsel.tuning.from_use import Judged, Use, UseSplit, visible

Vectors = npt.NDArray[np.float32]


@dataclass(frozen=True)
class Scores:
    r5: float
    ndcg10: float
    queries: int


@dataclass(frozen=True)
class Shadow:
    current: Scores
    candidate: Scores
    margin: float

    @property
    def wins(self) -> bool:
        """The candidate is measured on some queries and beats the current model's NDCG@10 by the margin."""
        return self.candidate.queries > 0 and self.candidate.ndcg10 >= self.current.ndcg10 + self.margin


def rankings(
    queries: Vectors, tools: Vectors, keys: Sequence[str], owners: Mapping[str, str], judged: Sequence[Judged]
) -> list[list[str]]:
    """Each judged query's top ``DEPTH`` tools by cosine among those its tenant sees (``owners``: key -> tenant)."""
    index = {key: i for i, key in enumerate(keys)}
    ranked = []
    for row, item in zip(queries, judged, strict=True):
        seen = np.array([index[k] for k in visible(item.tenant, owners)], dtype=np.int64)
        cosines = tools[seen] @ row
        top = seen[np.argsort(-cosines, kind="stable")[:DEPTH]]
        ranked.append([keys[i] for i in top])
    return ranked


def scores(ranked: Sequence[Sequence[str]], judged: Sequence[Judged]) -> Scores:
    """R@5 and NDCG@10 of the rankings against each query's relevant tools: each tenant's mean, then their mean,
    so that a tenant with many held-back queries does not alone decide what the candidate is judged on (a model
    that wins on its queries and loses on every other tenant's would otherwise switch for all)."""
    if not judged:
        return Scores(0.0, 0.0, 0)
    per_tenant: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r, j in zip(ranked, judged, strict=True):
        per_tenant[j.tenant].append((recall_at(r, j.relevant, 5), ndcg_at(r, j.relevant, 10)))
    means = np.array([np.mean(values, axis=0) for values in per_tenant.values()])
    return Scores(float(means[:, 0].mean()), float(means[:, 1].mean()), len(judged))


async def measure(settings: Settings, chosen: UseSplit, found: Use) -> Scores:
    """The held-back queries' R@5 and NDCG@10 with the model of ``settings`` (ONNX, as the product serves it)."""
    embedder = await load_model(settings, cache=False)
    keys = list(found.texts)
    tools = embedder.embed([found.texts[k] for k in keys])
    queries = embedder.embed([j.query for j in chosen.held_out])
    return scores(rankings(queries, tools, keys, found.owners, chosen.held_out), chosen.held_out)


async def shadow_test(settings: Settings, candidate: Settings, chosen: UseSplit, found: Use) -> Shadow:
    return Shadow(await measure(settings, chosen, found), await measure(candidate, chosen, found), settings.tune_margin)


def record(out: Path, shadow: Shadow) -> None:
    """The shadow test's figures in the candidate's card (its evaluation)."""
    card = read_card(out)
    if card is None:
        raise FileNotFoundError(f"no model card in {out}")
    figures = {
        "held_out_queries": shadow.candidate.queries,
        "current": {"R@5": round(shadow.current.r5, 4), "NDCG@10": round(shadow.current.ndcg10, 4)},
        "candidate": {"R@5": round(shadow.candidate.r5, 4), "NDCG@10": round(shadow.candidate.ndcg10, 4)},
        "margin": shadow.margin,
        "switched": shadow.wins,
    }
    write_card(out, card.model_copy(update={"evaluation": {**card.evaluation, "shadow_test": figures}}))
