"""The operators' dashboard and HTTP admin API: one FastAPI app over the admin client (``toolsel dashboard``,
started by ``toolsel up``). The services stay NATS-native; this is a thin layer that signs operators in, checks
CSRF tokens on writes and turns each route into one admin request."""
