"""Stores: the only code that knows MongoDB collections and Redis keys."""
