"""``toolsel bench``: select latency, selector memory and sync throughput at several catalog sizes, beside the
reference costs (a NATS round trip, one query embedding, the model's batch rate) measured in the same run."""
