"""Memory of toolsel mcp's server-side sessions at their bounds, with the real Sessions class (docs/results.md).
Each session records `answers` search_tools answers (a 2,000-character query and `tools` tools each) and keeps what
the class keeps (at most `offers`, default: the setting mcp_session_offers). Tool names: long (~95 characters,
unique to each answer: no sharing between sessions, the worst case) or short (a small catalog, shared). Measured with
tracemalloc over S sessions (after S sessions filled first, so that process-wide caches such as the tuple free lists
and the interned-string table count only as far as more sessions grow them), then multiplied out to the settings'
bounds.

With `reject`, each answer's tools are also rejected (a session keeps the first MAX_EXCLUDE rejections).

usage: python scripts/mcp_session_memory.py long|short [tools=20] [answers=100] [offers=setting] [reject]"""

import secrets
import sys
import tracemalloc
import uuid

from toolsel.contracts import ToolRef
from toolsel.mcp.sessions import Sessions
from toolsel.settings import Settings

S = 50
LONG = len(sys.argv) < 2 or sys.argv[1] != "short"
TOOLS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
ANSWERS = int(sys.argv[3]) if len(sys.argv) > 3 else 100
defaults = Settings()
OFFERS = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[4] != "-" else defaults.mcp_session_offers
REJECT = "reject" in sys.argv[5:]


def fill(sessions: Sessions) -> None:
    for _ in range(S):
        s = sessions.open()
        for i in range(ANSWERS):
            query = secrets.token_urlsafe(1500)[:2000]
            tools = [
                ToolRef(
                    plugin_id=f"plugin-{j % 7}",
                    name=(f"tool_{i}_{j}_{secrets.token_hex(40)}" if LONG else f"tool_{j}_{i % 5}"),
                )
                for j in range(TOOLS)
            ]
            s.record(uuid.uuid4(), query, 1, tools)
            if REJECT:
                s.reject(tools)
            del tools, query


tracemalloc.start()
sessions = Sessions(10 * S, 3600.0, OFFERS)
fill(sessions)
base = tracemalloc.take_snapshot()
fill(sessions)
assert len(sessions) == 2 * S
used = sum(st.size_diff for st in tracemalloc.take_snapshot().compare_to(base, "filename"))
per = used / S
kept = min(ANSWERS, OFFERS)
print(
    f"{'long' if LONG else 'short'} names, {TOOLS} tools an answer, {ANSWERS} answers recorded, {kept} kept"
    f"{', rejections' if REJECT else ''}: "
    f"{S} sessions {used / 1e6:.2f} MB, {per / 1e3:.1f} kB per session, {per / kept:.0f} B per answer kept"
)
print(
    f"  bound per identity ({defaults.mcp_max_sessions} sessions): {per * defaults.mcp_max_sessions / 1e6:.1f} MB; "
    f"server ({defaults.mcp_max_sessions_total} sessions): {per * defaults.mcp_max_sessions_total / 1e6:.0f} MB"
)
