"""A selection as stages read in order, each a module with a typed input and output (``run.py`` assembles them):

1. ``visibility``: policy, quarantine, the request's filters and the page filter -> the rows it may see;
2. ``spelling``: misspelt query words repaired against the catalog's words (``selector.spelling``);
3. ``retrieve``: each query part's retrieval signals over the pool (BM25 first; its fast path may skip the model);
4. ``fuse``: each part's signals in one relevance (the hot-query cache keeps 3 to 5 for a repeated query);
5. ``candidates``: each part's top-n, their merge, and the few rows every later stage reads (pins, related tools,
   the exploration depth), with the request's bandit context;
6. ``rerank``: posteriors, rerank signals, Thompson draws and confidence over those rows alone;
7. ``count``: how many tools before pins (the request's k, the default, or ``auto`` from the confidence);
8. ``choose``: the score floor, each part's quota, exploitation and exploration, pins, related tools, the limit;
9. ``budget``: the chosen tools within the request's token budget;
10. ``reason``: a sentence per chosen tool from the evidence that put it there;
11. ``reply``: the reply and the selection event.

From ``candidates`` on, every array is over the candidate rows (plus the exploration depth), never the catalog.
A stage that shapes the choice further (as ``budget`` does) takes ``choose.Choice`` and returns one, between
``choose`` and ``reply`` in ``run.py``.
"""
