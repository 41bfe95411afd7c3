"""Adapters of the client to agent frameworks, each behind its own optional extra (``pip install
toolsel[langchain]``)."""
