"""Reading timelines the way only tests need to (the store keeps what the app uses)."""

from __future__ import annotations

from socialapp.stores.timelines import home_key


def home_size(client, user_id: int) -> int:
    """Entries in the home timeline, not counting its floor sentinel."""
    return max(client.zcard(home_key(user_id)) - 1, 0)
