"""The PostgreSQL store: the pool and migrations, and one module per table group with its named queries.

Each table is written from exactly one module here (see CONTRIBUTING.md, "Who owns which table"); services
read other groups' tables only through the named queries and read-model views of this package.
"""

from toolsel.store.pool import answers, create_pool, migrate

__all__ = ["answers", "create_pool", "migrate"]
