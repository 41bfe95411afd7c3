"""The chaos scenarios' names, apart from their code, so that the CLI can list them without importing it."""

from typing import Literal, get_args

Scenario = Literal[  # in the order they run
    "forged",
    "tenants",
    "eavesdrop",
    "spoof",
    "id-reuse",
    "msg-id-claim",
    "oversize",
    "mcp-stdio",
    "kill",
    "kill-nats",
    "kill-postgres",
    "nats-restart",
    "fuzz",
]
SCENARIOS: tuple[Scenario, ...] = get_args(Scenario)
"""In the order they run: the fuzz last, as the valid admin requests it may draw can change the registry."""
