"""Selector: answers "which few tools for this query, page and tenant?" in milliseconds."""
