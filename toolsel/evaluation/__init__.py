"""``toolsel eval``: retrieval quality and learning measured on labelled tool-retrieval sets."""
