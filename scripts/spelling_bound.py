"""What the spelling stage's bound on lookups per query changes on real queries: each shared set's queries repaired
against its own catalog's words with ``TOOLSEL_SPELLING_MAX_WORDS`` as configured and with no bound, and the time
each takes.

    python scripts/spelling_bound.py SETS_DIR

Prints, per set, the queries whose repair differs and the repair's time per query (mean, max) both ways.
"""

import argparse
import time
from pathlib import Path

from toolsel.evaluation.dataset import load_set, tool_spec, wire_names
from toolsel.services.indexer.hashing import embedding_text
from toolsel.services.selector.retrieval import LexicalIndex
from toolsel.services.selector.spelling import english, repair
from toolsel.settings import Settings

UNBOUNDED = 10_000


def timed(queries: list[str], index: LexicalIndex, settings: Settings) -> tuple[list[str], list[float]]:
    repaired, seconds = [], []
    for query in queries:
        started = time.perf_counter()
        repaired.append(repair(query, index, settings))
        seconds.append(time.perf_counter() - started)
    return repaired, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sets_dir", type=Path)
    sets_dir = parser.parse_args().sets_dir
    bounded = Settings()
    english()  # the English word list, loaded once a process: not any query's time
    for folder in sorted(p for p in sets_dir.iterdir() if (p / "queries.jsonl").exists()):
        bench = load_set(folder)
        names = wire_names([t.name for t in bench.tools])
        texts = [embedding_text(tool_spec(t, names[t.name])) for t in bench.tools]
        queries = [q.text for q in bench.queries]
        runs = {}
        for label, settings in (("bounded", bounded), ("unbounded", Settings(spelling_max_words=UNBOUNDED))):
            index = LexicalIndex.of_texts(texts, k1=settings.bm25_k1, b=settings.bm25_b)  # nothing kept between runs
            runs[label] = timed(queries, index, settings)
        pairs = zip(queries, runs["bounded"][0], runs["unbounded"][0], strict=True)
        differing = [(q, a, b) for q, a, b in pairs if a != b]
        differ = len(differing)
        times = {k: (1000 * sum(s) / len(s), 1000 * max(s)) for k, (_, s) in runs.items()}
        print(
            f"{folder.name}: {len(queries)} queries, {differ} repaired differently;"
            f" ms per query mean/max bounded {times['bounded'][0]:.3f}/{times['bounded'][1]:.1f},"
            f" unbounded {times['unbounded'][0]:.3f}/{times['unbounded'][1]:.1f}"
        )
        for query, bounded_text, unbounded_text in differing:
            print(f"  {query!r}\n    bounded:   {bounded_text!r}\n    unbounded: {unbounded_text!r}")


if __name__ == "__main__":
    main()
