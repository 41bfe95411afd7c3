"""Indexer: keeps the registry true to what plugins declare, at a cost proportional to what changed."""
