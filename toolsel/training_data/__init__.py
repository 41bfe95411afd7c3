"""Query → tool training pairs for the retrieval model, built from the evaluation sets and public data.

Pure parts only: the readers turn a source's file contents into labelled queries over a catalog, the
near-duplicate index keeps evaluation queries out of external data, and the pair builder tags each pair with
the evaluation set it counts as and caps what one tool or one source contributes. ``scripts/
build_training_pairs.py`` does the reading and writing.
"""
