"""``toolsel bench``: select latency, selector and indexer memory, and sync throughput and its phases (the
write, the embedding pass and the model's share of it) at several catalog sizes, beside the reference costs (a
NATS round trip, one query embedding, the model's batch rate) measured in the same run."""
