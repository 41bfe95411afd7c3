"""toolsel's shared runtime: settings, the PostgreSQL store, the embedder, NATS helpers, embedded servers, CLI."""

__version__ = "0.1.0"
