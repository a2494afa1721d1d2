"""The lists' feeds in Redis: the only owner of their keys, ``list:{<owner_id>}:<list_id>``.

A list's feed is fed as a home is: a pushed member's post is added to the feeds of the lists
that hold them (those that exist: a missing feed is rebuilt by its reader from the pushed
members' outboxes), and a pulled member's posts are merged from their outbox at read time.
Each feed is a timeline set like a home (``socialapp.stores.timelines``: members
``"post_id:author_id"``, scored by post id, capped at ``SOCIALAPP_TIMELINE_CAP``, with a
floor), on its owner's hash slot, and lives ``SOCIALAPP_INACTIVE_AFTER_SECONDS`` from its
creation, renewed by every read: a list nobody reads expires.
"""

from __future__ import annotations

from collections.abc import Iterable

from socialapp.config import Settings
from socialapp.domain.timeline import Entry
from socialapp.stores.shared_feeds import FeedSets
from socialapp.stores.timelines import add_args, unlink_matching
from socialapp.stores.unavailable import REDIS, translates

PREFIX = "list:"


def list_key(owner_id: int, list_id: int) -> str:
    """A list's feed, on its owner's hash slot."""
    return f"{PREFIX}{{{owner_id}}}:{list_id}"


@translates(REDIS)
class ListFeeds(FeedSets):
    def __init__(self, client, settings: Settings) -> None:
        super().__init__(client, settings)
        self._cap = settings.timeline_cap

    def cap(self, key: str) -> int:
        return self._cap

    def backfill(self, keys: list[str], entries: Iterable[Entry], floor: int) -> None:
        """Add a member's entries to the existing feeds among ``keys``, raising each floor to
        at least ``floor`` (a member added, or an author who went from pulled to pushed)."""
        args = add_args(self._cap, floor, list(entries))
        self._lua.run([("add", key, args) for key in keys])

    def remove_author(self, keys: list[str], author_id: int) -> None:
        """Take every entry of ``author_id`` out of the feeds ``keys`` (a member removed)."""
        self._lua.run([("remove_author", key, (f":{author_id}",)) for key in keys])

    def drop_all(self) -> int:
        """Delete every list feed (``read`` mode reads none); each is rebuilt at its next
        read once another mode is in force. How many were dropped."""
        return unlink_matching(self._client, f"{PREFIX}*")
