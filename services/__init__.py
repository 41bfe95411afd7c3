"""The three toolsel services; none imports another."""
