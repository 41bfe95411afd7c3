"""``toolsel mcp``: an MCP server that gives an agent one discovery tool (seed 003's ``search_tools``) and
Millwright's review (seed 002's ``review_tools``), with sessions that remember what the agent rejected and
what it was already offered. It talks to the stack over NATS through the client, like any agent would."""
