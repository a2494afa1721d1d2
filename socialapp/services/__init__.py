"""Use cases. Each takes the stores it needs as arguments."""
