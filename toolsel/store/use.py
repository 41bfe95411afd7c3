"""What the stored events say about which tool served which query, for ``toolsel tune`` (read-only: the event
tables belong to ``events``, the tools to ``registry``).

An event speaks only of the tools its selection offered: a call or a verdict naming another tool is ignored, so a
hostile outcome cannot name a tool its tenant was never shown."""

import asyncpg

from toolsel.contracts import POSITIVE_VERDICTS
from toolsel.store.events import SELECTION_KEYS

USE_EVIDENCE = f"""
WITH s AS ({SELECTION_KEYS}),
said AS (
    SELECT o.selection_id, o.occurred_at, (c ->> 'plugin_id') || '/' || (c ->> 'name') AS tool, true AS positive
    FROM outcomes o, jsonb_array_elements(o.calls) c
    WHERE (c ->> 'success')::boolean
    UNION ALL
    SELECT r.selection_id, r.occurred_at, (v ->> 'plugin_id') || '/' || (v ->> 'name'),
           v ->> 'verdict' = ANY($1::text[])
    FROM reviews r, jsonb_array_elements(r.reviews) v
    UNION ALL
    SELECT r.selection_id, r.occurred_at, k, false
    FROM reviews r JOIN s USING (selection_id), unnest(s.keys) k
    WHERE r.none_of_these
)
SELECT s.selection_id, s.session_id, s.user_id, s.asked_at, s.tenant_id AS tenant,
       s.query, said.tool, said.positive, said.occurred_at AS at
FROM said JOIN s USING (selection_id)
WHERE said.tool = ANY(s.keys)
ORDER BY said.occurred_at, s.selection_id, said.tool
"""
"""Each (selection, tool) an outcome or review spoke of: a successful call or a verdict in ``$1``
(``POSITIVE_VERDICTS``: positive), another verdict or "none of these" (negative), with the selection's tenant, who
asked and when (its actor, as learning credits count it: ``toolsel.tenancy.actor``) and its query."""

LIVE_TOOL_SPECS = """
SELECT plugin_id || '/' || name AS key, tenant_id, spec FROM tools
WHERE deleted_at IS NULL AND status = 'active'
ORDER BY plugin_id, name
"""


async def evidence(conn: asyncpg.Connection | asyncpg.Pool) -> list[asyncpg.Record]:
    """Every stored outcome's and review's word on the tools of its selection (``USE_EVIDENCE``)."""
    rows: list[asyncpg.Record] = await conn.fetch(USE_EVIDENCE, sorted(POSITIVE_VERDICTS))
    return rows


async def live_tool_specs(conn: asyncpg.Connection | asyncpg.Pool) -> list[asyncpg.Record]:
    """Every active, not deleted tool's key, owning tenant ('*': shared) and spec."""
    rows: list[asyncpg.Record] = await conn.fetch(LIVE_TOOL_SPECS)
    return rows
