"""What a query of misspelt words costs the event loop among a vast vocabulary: the spelling stage's repair made on
the loop, against the longest pause of the loop while the same repair runs in a worker thread, as the selector makes
it (``selector.app._spell_ahead``). Made-up words stand for a tenant's own vocabulary (docs/results.md).

usage: python scripts/spelling_off_loop.py [--words 400000] [--documents 200]"""

import argparse
import asyncio
import random
import string
import time

from toolsel.services.selector import spelling
from toolsel.services.selector.retrieval import LexicalIndex
from toolsel.settings import Settings


def made_up(rng: random.Random, count: int) -> list[str]:
    return ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(6, 11))) for _ in range(count)]


async def longest_pause(work: "asyncio.Future[str]") -> float:
    """The longest the event loop went without running a 1 ms timer while ``work`` ran."""
    longest, last = 0.0, time.perf_counter()
    while not work.done():
        await asyncio.sleep(0.001)
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    return longest


async def main(words: int, documents: int) -> None:
    rng = random.Random(0)
    vocabulary = made_up(rng, words)
    per = len(vocabulary) // documents
    index = LexicalIndex.of_texts(
        [" ".join(vocabulary[i * per : (i + 1) * per]) for i in range(documents)], k1=1.2, b=0.75
    )
    settings = Settings()
    queries = [" ".join(made_up(rng, 12)) for _ in range(3)]
    spelling.repair("warm up", index, settings)  # the English list, loaded once a process
    started = time.perf_counter()
    spelling.repair(queries[0], index, settings)
    print(f"{words:,} words: a query's repair on the event loop holds it {time.perf_counter() - started:.2f} s")
    for query in queries[1:]:
        work = asyncio.ensure_future(asyncio.to_thread(spelling.repair, query, index, settings))
        pause = await longest_pause(work)
        print(f"the same kind of query repaired in a worker thread: the loop's longest pause {pause * 1000:.0f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=400_000)
    parser.add_argument("--documents", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(main(args.words, args.documents))
