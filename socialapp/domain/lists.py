"""Lists: an account's named sets of the accounts it follows, and their bounds.

A list holds accounts its owner follows (or the owner itself), as on Mastodon; its timeline
is its members' posts. The bounds keep one list's page, and one change, a bounded cost.
"""

from __future__ import annotations

MAX_LISTS = 50  # lists per account: Mastodon's List::PER_ACCOUNT_LIMIT
MAX_MEMBERS = 500  # accounts per list: Mastodon has no bound; a page reads every member
MAX_CHANGED = 80  # accounts added or removed by one request: a page of accounts on Mastodon
TITLE_LENGTH = 30  # characters of a title: later Mastodon's bound (4.3 has none)
REPLIES_POLICIES = ("followed", "list", "none")  # stored and answered; no effect on pages yet
DEFAULT_REPLIES_POLICY = "list"


def new_list(list_id: int, account_id: int, title: str, replies_policy: str, exclusive: bool):
    """A list as stored: its owner (``account_id``), no members yet."""
    return {
        "_id": list_id,
        "account_id": account_id,
        "title": title,
        "replies_policy": replies_policy,
        "exclusive": exclusive,
        "members": 0,
    }
