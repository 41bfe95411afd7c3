"""The selector's signals: one module per per-row score, one protocol (``base``), one registry (``registry``)."""
