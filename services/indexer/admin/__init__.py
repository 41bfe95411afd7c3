"""The registry area of the admin API, served by the indexer (which owns the registry's tables): one router per
area, under ``toolsel.rpc.admin.``. The learner serves the learning and analytics areas."""

from faststream.nats import NatsRouter

from toolsel.services.indexer.admin import categories, embeddings, page_mappings, rules, tools


def admin_routers() -> list[NatsRouter]:
    """Fresh routers of every area (an app includes its own)."""
    return [tools.router(), embeddings.router(), categories.router(), page_mappings.router(), rules.router()]
