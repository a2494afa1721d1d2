"""Redis copies of whom and what each reader follows: the keys ``following:{<user_id>}``
(accounts), ``followed_tags:{<user_id>}`` (hashtags) and their change counter
``following_changes:{<user_id>}``.

Each set holds the reader's followee ids (or followed tags' names, and each one's number
after ``"#"``: ``TagIds``) plus the member ``"0"`` once loaded (no tag name is all digits);
the followee set also holds ``"#"`` while the reader follows any hashtag, so a home page
learns in its one script call whether to read tags.
MongoDB (``FollowStore``, ``TagFollowStore``) is the store of record: a missing set reads
as None, and ``FeedSources`` loads it from there, kept only if the counter did not move
meanwhile (a load racing an unfollow would keep a stale followee). A tag follow or unfollow
drops both copies (``forget_followed_tags``).

The followee set is the home's: the accounts followed less the members of the reader's
exclusive lists (``FeedSources.followees``). A change of those drops it
(``forget_followees``), and a follow keeps out an account an exclusive list holds
(``FeedManager.record_follow``).
"""

from __future__ import annotations

from pathlib import Path

from socialapp.stores.lua_library import used_part
from socialapp.stores.unavailable import REDIS, asks_nothing, translates

LOADED = "0"  # sentinel member: ids start at 1, so a set holding "0" was loaded
FOLLOWS_TAGS = "#"  # in a followee set: the reader follows hashtags (no account id or tag)
TAG_NUMBER = "#"  # in a followed tags set: before each tag's number (no tag name has it)
FOLLOWING_TTL_SECONDS = 24 * 3600
LUA = Path(__file__).parent / "lua"


def _following(user_id: int) -> str:
    return f"following:{{{user_id}}}"


def followed_tags_key(user_id: int) -> str:
    """The reader's followed tags (a page script reads them beside the home)."""
    return f"followed_tags:{{{user_id}}}"


def _following_changes(user_id: int) -> str:
    return f"following_changes:{{{user_id}}}"


@translates(REDIS)
class FolloweeCopies:
    def __init__(self, client) -> None:
        self._redis = client
        self._scripts = {
            name: client.register_script((LUA / f"state_{name}.lua").read_text())
            for name in ("followees", "fill_followees")
        }
        pulled_home = (LUA / "state_pulled_home.lua").read_text()  # with lib's hidden_among
        library = used_part((LUA / "lib.lua").read_text(), pulled_home)
        self._scripts["pulled_home"] = client.register_script(library + pulled_home)

    def followees(self, user_id: int) -> set[int] | None:
        """The reader's followees; None when the set was never loaded (or was evicted)."""
        text = self._scripts["followees"](keys=[_following(user_id)])
        members = set(text.split(",")) if text else set()
        if LOADED in members:
            return {int(m) for m in members if m.isdigit() and m != LOADED}
        return None

    def pulled_home(
        self, user_id: int, hidden: str, now: float, active: str | None = None
    ) -> tuple[set[int] | None, list[str] | None, set[int] | None]:
        """A pulled home's plan in one call (``lua/state_pulled_home.lua``): the reader's
        followees, the hashtags they follow (``followed_tags``) and the followees hidden
        from them at ``now`` by the set ``hidden`` (``HiddenAccounts.key``, same hash tag);
        None for each copy not loaded (the hidden followees, too, when the followees are
        not). ``active``: readers' activity set (one server), where the reader is marked
        active at ``now``."""
        keys = [_following(user_id), followed_tags_key(user_id), hidden]
        keys += [active] if active else []
        found = self._scripts["pulled_home"](keys=keys, args=[LOADED, now, user_id])
        followees, tags, hidden_ids = (None if text == "-" else text for text in found)
        if followees is not None:
            followees = {int(m) for m in followees.split(",") if m.isdigit() and m != LOADED}
        if tags is not None:
            tags = _numbered_names(set(tags.split(",")))
        if hidden_ids is not None:
            hidden_ids = {int(m) for m in hidden_ids.split(",") if m}
        return followees, tags, hidden_ids

    @asks_nothing
    def following_set(self, user_id: int) -> tuple[str, str]:
        """The followee set's key and the member present once it is loaded (a page read
        checks authors against it on the reader's hash slot)."""
        return _following(user_id), LOADED

    def followee_changes(self, user_id: int) -> str:
        """The set's change counter: read it before loading the followees from MongoDB."""
        return self._redis.get(_following_changes(user_id)) or ""

    def fill_followees(self, user_id: int, changes: str, followee_ids: list[int]) -> bool:
        """Store a loaded set unless it changed since ``changes`` was read; True if stored."""
        keys = [_following(user_id), _following_changes(user_id)]
        args = [changes, FOLLOWING_TTL_SECONDS, LOADED, *followee_ids]
        return bool(self._scripts["fill_followees"](keys=keys, args=args))

    def followed_tags(self, user_id: int) -> list[str] | None:
        """The hashtags the reader follows (normal forms); None when never loaded, or loaded
        by a version that kept no numbers (filled again, the numbers added)."""
        return _numbered_names(self._redis.smembers(followed_tags_key(user_id)))

    def streamed_tags(self, user_id: int) -> list[str] | None:
        """The hashtags the reader follows, as the live streams read them: none when the
        followee set does not say the reader follows any (``FOLLOWS_TAGS``; or is not
        loaded), None when it does and the tag set is not loaded (a home read loads it)."""
        pipe = self._redis.pipeline(transaction=False)  # one hash tag: one slot
        pipe.sismember(_following(user_id), FOLLOWS_TAGS)
        pipe.smembers(followed_tags_key(user_id))
        follows_tags, members = pipe.execute()
        if not follows_tags:
            return []
        if LOADED not in members:
            return None
        return _tag_names(members)

    def fill_followed_tags(self, user_id: int, changes: str, tags: dict[str, int]) -> bool:
        """Store the loaded tags (each name and its number, ``TagIds``: what a tagged set's
        entries carry) unless a follow changed since ``changes``; True if stored."""
        keys = [followed_tags_key(user_id), _following_changes(user_id)]
        numbers = [f"{TAG_NUMBER}{tag_id}" for tag_id in tags.values()]
        args = [changes, FOLLOWING_TTL_SECONDS, LOADED, *tags, *numbers]
        return bool(self._scripts["fill_followees"](keys=keys, args=args))

    def forget_followed_tags(self, user_id: int) -> None:
        """Drop the reader's copies (a tag followed or unfollowed: whether the followee set
        holds ``FOLLOWS_TAGS`` may change): both are loaded again."""
        self._forget(user_id, followed_tags_key(user_id), _following(user_id))

    def forget_followees(self, user_id: int) -> None:
        """Drop the reader's followee set (who their exclusive lists hold changed): loaded
        again, and a load that began before is not kept."""
        self._forget(user_id, _following(user_id))

    def _forget(self, user_id: int, *keys: str) -> None:
        pipe = self._redis.pipeline(transaction=True)  # one hash tag: one slot
        pipe.delete(*keys)
        pipe.incr(_following_changes(user_id))
        pipe.expire(_following_changes(user_id), 2 * FOLLOWING_TTL_SECONDS)
        pipe.execute()

    def add_followee(self, user_id: int, followee_id: int) -> None:
        # Added even when the set is not loaded: a set without the sentinel is reloaded.
        self._changed(user_id, "sadd", followee_id)

    def remove_followee(self, user_id: int, followee_id: int) -> None:
        self._changed(user_id, "srem", followee_id)

    def _changed(self, user_id: int, command: str, followee_id: int) -> None:
        pipe = self._redis.pipeline(transaction=True)  # one hash tag: one slot
        getattr(pipe, command)(_following(user_id), str(followee_id))
        pipe.incr(_following_changes(user_id))
        pipe.expire(_following_changes(user_id), 2 * FOLLOWING_TTL_SECONDS)
        pipe.execute()


def _numbered_names(members: set[str]) -> list[str] | None:
    """The followed tags' names in a followed tags set's members; None when not loaded, or
    loaded by a version that kept no numbers."""
    names = _tag_names(members)
    numbered = any(member.startswith(TAG_NUMBER) for member in members)
    if LOADED not in members or (names and not numbered):
        return None
    return names


def _tag_names(members: set[str]) -> list[str]:
    """The followed tags' names among a followed tags set's members."""
    return sorted(m for m in members if m != LOADED and not m.startswith(TAG_NUMBER))
