"""Home timelines, author outboxes and readers' pulled authors in Redis: the only owner of
their keys.

Each, ``home:{user_id}`` / ``outbox:{author_id}``, holds entries ordered by post id, which
the scripts read as ``"post_id:author_id"`` members (a boost's:
``"post_id:original_id:original_author:author_id"``), and a floor: the timeline is complete
for every post id above it (0: all history; +inf: being rebuilt, trust nothing). A timeline
that does not exist is unknown and must be rebuilt by the caller. How they are stored is the
scripts' alone (``lua/lib.lua``): fixed-width 14-byte records in buckets of one hash per
timeline, about 15 bytes of Redis an entry (docs/data-model.md, Timeline encoding), and
beside a home the list of deliveries not yet folded into it (``pending_key``); a timeline
left in the old sorted-set encoding is converted when a script first touches it.

Next to each home, ``tagged:{user_id}`` holds the posts of the pushed hashtags the reader
follows, one entry per post and tag that brought it (``"post_id:author_id#tag_id"``, the tag
by its number, ``TagIds``: one fixed-width record of 18 bytes), so that unfollowing a tag takes
out exactly its entries, with beside it the list of deliveries not yet folded into it
(``tagged_pending_key``), as a home's; and ``pulls:{user_id}`` holds the authors
that reader merges at read time (celebrities in hybrid mode, pull overrides, authors being
reconciled), so a page reads its sources on the reader's own hash slot without looking at
every account followed. The member ``"0"`` marks the set loaded, ``"-1"`` being rebuilt; a
missing set is rebuilt by its reader.

Every script works on sets one at a time. On a Redis Cluster each call names one key; on a
single server, delivering to many homes and reading many outboxes send up to ``BATCH`` keys
to one script call, which saves a round trip and a command per set.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from redis.cluster import RedisCluster
from redis.exceptions import NoScriptError

from socialapp.config import Settings
from socialapp.domain.timeline import Entry
from socialapp.stores import tag_copies
from socialapp.stores.followee_copies import FOLLOWS_TAGS, followed_tags_key
from socialapp.stores.keyword_filters import LOST, version_key, version_of
from socialapp.stores.lua_library import used_part
from socialapp.stores.redis_client import thread_connections
from socialapp.stores.unavailable import REDIS, translates

if TYPE_CHECKING:
    from socialapp.stores.tag_follows import TagIds

LUA = Path(__file__).parent / "lua"
SCRIPTS = (
    "create", "add", "add_many", "begin_rebuild", "finish_rebuild", "remove_author", "read",
    "read_many", "newest_many", "read_page", "read_pulled", "read_shared", "read_list", "pulls_add",
    "pulls_rebuild", "deliver", "members_begin", "members_finish", "remove", "size",
)  # fmt: skip
SENTINEL = "floor"
# Records a compact timeline's bucket holds: 145 of 14 bytes is 2,030 bytes, just under a
# 2 KB allocation (tests use smaller buckets to exercise splits and trims on short timelines).
BUCKET_RECORDS = 145
BATCH = 1000  # keys per script call on a single server: bounds how long one call blocks
# A home's, tagged set's or list feed's pending deliveries (``pending_key``,
# ``tagged_pending_key``, ``list_feeds.list_pending_key``) are folded into it by the delivery
# that finds this many: the list stays a few hundred bytes, and a fold is one delivery in 32.
PENDING_FOLD = 32
PENDING_SUFFIX = ":new"
# The list feeds' key prefix, for the scripts to tell a list feed (which has a pending list)
# by: ``list_feeds`` builds and owns the keys (it imports this module, so the prefix is here).
LIST_FEEDS = "list:"
LOADED, BUILDING = "0", "-1"  # pulled sets' markers: author ids start at 1
MISSING, INACTIVE = "missing", "inactive"  # why a page's sources must be rebuilt first
READY = "="  # a page script's first reply when it answers the page itself
HIDDEN_MISSING = "hidden"  # the reader's hidden accounts must be loaded first
TAGS_MISSING, TAGGED_MISSING = "tags", "tagged"  # the followed tags' copy, the tagged set


def member_text(entry: Entry) -> str:
    """``post:author``, or for a boost ``post:original:original_author:author``: the post id
    first and the author last in both, which is what the scripts match."""
    if entry.boost_of:
        return f"{entry.post_id}:{entry.boost_of}:{entry.original_author}:{entry.author_id}"
    return f"{entry.post_id}:{entry.author_id}"


def _entry(member: str) -> Entry:
    post_id, *original, author_id = member.split(":")
    return Entry(int(post_id), int(author_id), *map(int, original))


class Slice(NamedTuple):
    entries: list[Entry]  # newest first
    floor: float | None  # None: the set does not exist


class PageSources(NamedTuple):
    home: Slice
    pulled: list[int]  # authors the reader pulls and still follows
    unfollowed: set[int]  # authors of home entries the reader no longer follows
    outboxes: dict[int, Slice] | None  # the reader's and the pulled authors'; None: not read
    cached: dict[int, str | None] | None = None  # the likely posts' post cache values, raw
    hidden_originals: frozenset[int] = frozenset()  # authors of boosted posts not seen
    hidden_boosters: frozenset[int] = frozenset()  # whose boosts the reader hides
    # The post id down to which ``outboxes`` were read (None: a page deep): the last entry
    # of a full home, below which no outbox entry is on the page.
    outbox_bound: int | None = None
    follows_tags: bool = True  # the reader follows hashtags (their feeds are read too)
    # With ``follows_tags``: the tagged set's entries, each with the tag that brought it,
    # and its floor; the tags followed, each with its follower count (None: not counted)
    # and whether it is being reconciled (None: not read, on a cluster); and the authors of
    # tagged entries hidden from the reader.
    tagged: tuple[tuple[Entry, str], ...] = ()
    tagged_floor: float = 0
    tags: dict[str, tuple[int | None, bool] | None] | None = None
    tagged_hidden: frozenset[int] = frozenset()
    # The reader's keyword filters' version (``FilterVersions``; ``LOST``: Redis lacks it).
    filter_version: int = LOST
    # The followed hashtags' feeds the script found pulled and read, by hashtag (each floor
    # None when missing; None: not read, on a cluster), and the authors of their entries the
    # reader does not see.
    tag_feeds: dict[str, Slice] | None = None
    tag_feeds_hidden: frozenset[int] = frozenset()


class ReadyPage(NamedTuple):
    """A home or list page its script found whole (``read_page_sources`` with ``ready``, a
    home's here, a list's in ``ListFeeds``)."""

    ids: list[int]  # the page's posts, in order
    forms: list[str]  # their response forms, in the same order
    from_home: int  # how many of them the home (or the list's feed) holds
    merged: int  # the outboxes merged with it


def ready_page(reply) -> ReadyPage | None:
    """A home's or a list's page script reply (``decided_answer`` in lib.lua) as the page it
    found whole; None when it left the page to Python."""
    if not isinstance(reply, list) or reply[0] != READY:
        return None
    _, ids, from_home, merged, *forms = reply
    return ReadyPage(ids_of(ids), forms, int(from_home), int(merged))


class PulledRead(NamedTuple):
    """A pulled page's round as ``read_pulled`` reads it in one call: the outboxes by author
    and the shared feeds by key (a floor None: missing), and as the reader's hidden set
    answers about them, whom it hides (authors of boosted posts and of the feeds' entries)
    and whose boosts it hides (None for both: the set is missing)."""

    outboxes: dict[int, Slice]
    feeds: dict[str, Slice]
    hidden: set[int] | None
    boosts_hidden: set[int] | None


def home_key(user_id: int | str) -> str:
    return f"home:{{{user_id}}}"


def pending_key(user_id: int | str) -> str:
    """The list of deliveries to ``home_key(user_id)`` not yet folded into it (same hash
    tag): one LPUSHX a delivery, existing exactly while the home does."""
    return f"{home_key(user_id)}{PENDING_SUFFIX}"


def outbox_key(author_id: int) -> str:
    return f"outbox:{{{author_id}}}"


def tagged_key(user_id: int | str) -> str:
    return f"tagged:{{{user_id}}}"


def tagged_pending_key(user_id: int | str) -> str:
    """The list of deliveries to ``tagged_key(user_id)`` not yet folded into it, as
    ``pending_key`` is a home's."""
    return f"{tagged_key(user_id)}{PENDING_SUFFIX}"


def tagged_member(entry: Entry, tag_id: int) -> str:
    """A tagged set's member: the entry and the number of the followed tag that brought it."""
    return f"{member_text(entry)}#{tag_id}"


def pulls_key(user_id: int) -> str:
    return f"pulls:{{{user_id}}}"


@functools.lru_cache(maxsize=16)  # a process makes the same few (each app, each worker)
def _script_texts(folder: Path, ttl: int, bucket: int) -> tuple[tuple[str, str], ...]:
    """Each timeline script's text: the constants, the part of the library it uses, and
    its own code, from ``folder`` (``LUA``; a benchmark reads another commit's)."""
    constants = (
        f"local TTL = {int(ttl)}\nlocal BUCKET = {int(bucket)}\n"
        f"local LOADED = '{LOADED}'\nlocal BUILDING = '{BUILDING}'\n"
        f"local OUTBOX_PREFIX = '{outbox_key(0)[:-2]}'\n"
        f"local HOME_PREFIX = '{home_key(0)[:-2]}'\n"
        f"local TAGGED_PREFIX = '{tagged_key(0)[:-2]}'\n"
        f"local LIST_PREFIX = '{LIST_FEEDS}'\n"
        f"local TAGS = '{FOLLOWS_TAGS}'\n"
        f"local PENDING_SUFFIX = '{PENDING_SUFFIX}'\nlocal FOLD = {PENDING_FOLD}\n"
    )
    library = (folder / "lib.lua").read_text()
    texts = []
    for name in SCRIPTS:
        script = (folder / f"{name}.lua").read_text()
        texts.append((name, constants + used_part(library, script) + script))
    return tuple(texts)


class TimelineScripts:
    """The timeline scripts (``lua/``) on one client, run in pipelines: every timeline of
    entries with a floor (homes, outboxes, tagged sets, the list feeds and shared feeds of
    ``socialapp.stores.list_feeds`` and ``shared_feeds``) is written and read through them,
    and only through them: they alone know its encoding. ``ttl``: the
    seconds a set lives from its creation or rebuild (or a read that renews it)."""

    def __init__(self, client, ttl: int, bucket: int = BUCKET_RECORDS) -> None:
        self._client = client
        self.batched = not isinstance(client, RedisCluster)
        # One server: a single call goes on the thread's own connection (a page's script).
        self._single = thread_connections(client) if self.batched else client
        self._scripts = {
            name: client.register_script(text) for name, text in _script_texts(LUA, ttl, bucket)
        }

    def script_text(self, name: str) -> str:
        """The text sent for script ``name`` (a benchmark tells an older commit's by it)."""
        return self._scripts[name].script

    # Running scripts: EVALSHA in a pipeline (cluster pipelines group the calls per node).
    # Cluster pipelines cannot load scripts, so on NOSCRIPT every script is loaded on every
    # primary and the batch runs again; each script is idempotent, so a re-run is harmless.

    def calls(self, name: str, keys: list[str], args, single: str | None = None) -> list[tuple]:
        """One ``name`` call per key on a cluster; calls of BATCH keys to ``single`` (default
        ``name_many``) on one server."""
        if not self.batched:
            return [(name, key, args) for key in keys]
        batched = single or f"{name}_many"
        return [(batched, part, args) for part in _batches(keys)]

    def remove(self, keys: list[str], entry: Entry) -> int:
        """Take ``entry`` out of the timelines ``keys`` (a deleted post; in a tagged set,
        under every tag), in one round trip; how many entries were taken out."""
        args = (member_text(entry),)
        return sum(self.run(self.calls("remove", keys, args, single="remove")))

    def sizes(self, keys: list[str]) -> list[int | None]:
        """The entries each timeline holds (None: it does not exist), in one round trip."""
        replies = self.run(self.calls("size", keys, (), single="size"))
        held = [int(part) for reply in replies for part in reply.split(",") if part]
        return [None if size < 0 else size for size in held]

    def run(self, calls: list[tuple[str, str, tuple | list]]) -> list:
        if not calls:
            return []
        try:
            return self._pipeline(calls)
        except NoScriptError:
            for script in self._scripts.values():
                self._client.script_load(script.script)
            return self._pipeline(calls)

    def _pipeline(self, calls) -> list:
        commands = []
        for name, keys, args in calls:
            keys = [keys] if isinstance(keys, str) else keys
            commands.append(("EVALSHA", self._scripts[name].sha, len(keys), *keys, *args))
        if len(commands) == 1:  # a page read: a pipeline would only add its own overhead
            return [self._single.execute_command(*commands[0])]
        pipe = self._client.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)
        return pipe.execute()


@translates(REDIS)
class TimelineStore:
    def __init__(self, client, settings: Settings, tag_ids: TagIds | None = None) -> None:
        """``tag_ids``: the tags' numbers, which tagged sets hold (needed only for them)."""
        self._client = client
        self._tag_ids = tag_ids
        self._home_cap = settings.timeline_cap
        self._outbox_cap = settings.outbox_cap
        # A home unread for as long as a reader stays active is an idle reader's: fan-out
        # skips them and their next read rebuilds it. An outbox lives as long from its
        # creation, then is rebuilt on demand.
        self._lua = TimelineScripts(client, settings.inactive_after_seconds)
        self._batched = self._lua.batched
        self._run, self._calls = self._lua.run, self._lua.calls

    @property
    def batched(self) -> bool:
        """One server: scripts may name keys of many hash slots in one call."""
        return self._batched

    # Creating and rebuilding

    def create_home(self, user_id: int, entries: Iterable[Entry] = (), floor: int = 0) -> bool:
        """Create the home timeline unless it exists; True when it was created."""
        return bool(self._one("create", home_key(user_id), self._home_cap, floor, entries))

    def create_homes(self, user_ids: Iterable[int]) -> int:
        """Create empty home timelines (floor 0) where none exists, in one round trip."""
        args = add_args(self._home_cap, 0, [])
        return sum(self._run([("create", home_key(user_id), args) for user_id in user_ids]))

    def create_tagged(self, user_ids: Iterable[int]) -> int:
        """Create empty tagged sets (floor 0) where none exists, in one round trip (a
        generator's readers who follow no tag yet, as their first page would)."""
        args = add_args(self._home_cap, 0, [])
        return sum(self._run([("create", tagged_key(user_id), args) for user_id in user_ids]))

    def create_outbox(self, author_id: int, entries: Iterable[Entry] = (), floor: int = 0) -> bool:
        return bool(self._one("create", outbox_key(author_id), self._outbox_cap, floor, entries))

    def begin_rebuild_home(self, user_id: int) -> None:
        """Empty the timeline with floor +inf; deliveries meanwhile are kept, uncapped."""
        self._run([("begin_rebuild", home_key(user_id), ())])

    def begin_rebuild_outbox(self, author_id: int) -> None:
        self.begin_rebuild_outboxes([author_id])

    def begin_rebuild_outboxes(self, author_ids: Iterable[int]) -> None:
        """``begin_rebuild_home`` for outboxes, in one round trip."""
        self._run([("begin_rebuild", outbox_key(author_id), ()) for author_id in author_ids])

    def finish_rebuild_home(self, user_id: int, entries: Iterable[Entry], floor: int) -> bool:
        """Add ``entries``, set the floor to max(floor, a floor already set), trim.

        False when the timeline vanished meanwhile (nothing is written then).
        """
        key = home_key(user_id)
        return bool(self._one("finish_rebuild", key, self._home_cap, floor, entries))

    def finish_rebuild_outbox(self, author_id: int, entries: Iterable[Entry], floor: int) -> bool:
        return self.finish_rebuild_outboxes({author_id: (entries, floor)})[0]

    def finish_rebuild_outboxes(self, rebuilt: dict[int, tuple[Iterable[Entry], int]]) -> list:
        """``finish_rebuild_home`` for outboxes (author -> entries, floor), in one round trip;
        for each, in order, whether it was written."""
        calls = [
            ("finish_rebuild", outbox_key(author_id), add_args(self._outbox_cap, floor, entries))
            for author_id, (entries, floor) in rebuilt.items()
        ]
        return [bool(written) for written in self._run(calls)]

    # Delivering and removing

    def add_to_homes(self, user_ids: Iterable[int], entry: Entry) -> None:
        """Deliver ``entry`` to every existing home among ``user_ids`` in one round trip."""
        args = add_args(self._home_cap, 0, [entry])
        self._run(self._calls("add", [home_key(user_id) for user_id in user_ids], args))

    def deliver(self, user_ids: list[int], entry: Entry) -> int:
        """One server: deliver ``entry`` to the existing homes among ``user_ids``, one command
        per ``BATCH`` readers; how many homes exist. A home exists while its reader is active
        (its TTL is the activity cutoff, renewed by their reads), so idle readers are skipped
        without reading the activity set. On a cluster the homes span hash slots: filter with
        the activity set, then ``add_to_homes``."""
        return self.deliver_marked(user_ids, entry, ("", 0))[0]

    def deliver_marked(
        self, user_ids: list[int], entry: Entry, marks: tuple[str, float]
    ) -> tuple[int, list[int]]:
        """``deliver``, and which of ``user_ids`` hold a mark in ``marks``: a sorted set of
        readers, each scored by when their mark ends, and the time now (the caller names the
        set: the streams' markers), read by the same script calls."""
        if not self._batched:
            raise NotImplementedError("a cluster delivers with add_to_homes")
        return self._deliver(user_ids, entry.post_id, member_text(entry), home_key, marks)

    def _deliver(
        self, user_ids: list[int], score: int, member: str, key, marks=("", 0)
    ) -> tuple[int, list[int]]:
        """The deliver script per ``BATCH`` readers, their ids packed in one argument (a
        thousand arguments cost the client more to pack than the delivery's own Python)."""
        args = (self._home_cap, score, member, key(0)[:-2], *marks)
        calls = [("deliver", [], (*args, _json_ids(ids))) for ids in _batches(user_ids)]
        replies = self._run(calls)
        return sum(reply[0] for reply in replies), [int(r) for reply in replies for r in reply[1:]]

    # Tagged sets: the posts of the pushed hashtags each reader follows

    def deliver_tagged(self, user_ids: list[int], entry: Entry, tag: str) -> int:
        """Deliver a post with ``tag`` to the existing tagged sets among ``user_ids`` (the
        tag's followers), one LPUSHX onto each one's pending list as for a home; how many
        exist (on one server: one command per ``BATCH``)."""
        member = tagged_member(entry, self._tag_id(tag))
        if self._batched:
            return self._deliver(user_ids, entry.post_id, member, tagged_key)[0]
        args = [self._home_cap, 0, entry.post_id, member]
        keys = [tagged_key(user_id) for user_id in user_ids]
        return sum(self._run([("add", key, args) for key in keys]))

    def backfill_tagged(
        self, user_ids: Iterable[int], entries: Iterable[Entry], floor: float, tag: str
    ) -> None:
        """Add a tag's entries to the existing tagged sets among ``user_ids`` and raise their
        floor to at least ``floor``, in one round trip."""
        args = tagged_args(self._home_cap, floor, {self._tag_id(tag): entries})
        self._run(self._calls("add", [tagged_key(user_id) for user_id in user_ids], args))

    def remove_from_tagged(self, user_ids: Iterable[int], entry: Entry) -> None:
        """Take ``entry`` (a deleted post, under every tag) out of these readers' tagged sets
        (pending entries folded first)."""
        keys = [tagged_key(user_id) for user_id in user_ids]
        self._lua.remove(keys, entry)

    def remove_tag(self, user_id: int, tag: str) -> int:
        """Take every entry ``tag`` brought out of the reader's tagged set; how many."""
        return self._run([("remove_author", tagged_key(user_id), (f"#{self._tag_id(tag)}",))])[0]

    def begin_rebuild_tagged(self, user_id: int) -> None:
        """Empty the tagged set with floor +inf; deliveries meanwhile are kept, uncapped."""
        self._run([("begin_rebuild", tagged_key(user_id), ())])

    def finish_rebuild_tagged(
        self, user_id: int, entries: dict[str, Iterable[Entry]], floor: float
    ) -> bool:
        """Add each tag's ``entries``, set the floor to max(floor, a floor already set),
        trim; False when the set vanished meanwhile."""
        ids = self._tag_ids.ids(list(entries)) if entries else {}
        args = tagged_args(self._home_cap, floor, {ids[tag]: e for tag, e in entries.items()})
        return bool(self._run([("finish_rebuild", tagged_key(user_id), args)])[0])

    def _tag_id(self, tag: str) -> int:
        return self._tag_ids.ids([tag])[tag]

    def drop_tagged(self, batch: int = 1000) -> int:
        """Delete every tagged set (``read`` mode reads none) and its pending list, as
        ``drop_homes``."""
        dropped = unlink_matching(self._client, tagged_key("*"), batch)
        unlink_matching(self._client, tagged_pending_key("*"), batch)
        return dropped

    def add_to_outbox(self, author_id: int, entry: Entry) -> None:
        self._one("add", outbox_key(author_id), self._outbox_cap, 0, [entry])

    def backfill_home(self, user_id: int, entries: Iterable[Entry], floor: int) -> None:
        """Add a followee's entries and raise the home floor to at least ``floor``."""
        self.backfill_homes([user_id], entries, floor)

    def backfill_homes(self, user_ids: Iterable[int], entries: Iterable[Entry], floor: int):
        """``backfill_home`` for the existing homes among ``user_ids``, in one round trip."""
        args = add_args(self._home_cap, floor, entries)
        self._run(self._calls("add", [home_key(user_id) for user_id in user_ids], args))

    def remove_from_homes(self, user_ids: Iterable[int], entry: Entry) -> None:
        self._lua.remove([home_key(user_id) for user_id in user_ids], entry)

    def remove_from_outbox(self, author_id: int, entry: Entry) -> None:
        self._lua.remove([outbox_key(author_id)], entry)

    def remove_author_from_home(self, user_id: int, author_id: int) -> int:
        """Remove every entry of ``author_id``; how many were removed."""
        return self._run([("remove_author", home_key(user_id), (f":{author_id}",))])[0]

    # Reading

    def read_home(
        self,
        user_id: int,
        max_id: int | None = None,
        since_id: int | None = None,
        count: int = 20,
    ) -> Slice:
        """Entries with since_id < post_id < max_id, newest first, and the floor.

        Reading renews the home's TTL: only a home nobody reads expires.
        """
        call = ("read", home_key(user_id), (*read_args(max_id, since_id, count), 1))
        return slice_of(self._run([call])[0])

    def read_outboxes(
        self,
        author_ids: list[int],
        max_id: int | None = None,
        since_id: int | None = None,
        count: int = 20,
    ) -> dict[int, Slice]:
        args = read_args(max_id, since_id, count)
        keys = [outbox_key(author_id) for author_id in author_ids]
        replies = self._run(self._calls("read", keys, args))
        if self._batched:
            slices = [slice_from_text(part) for reply in replies for part in reply.split(";")]
        else:
            slices = [slice_of(reply) for reply in replies]
        return dict(zip(author_ids, slices, strict=True))

    def newest_in_outboxes(
        self,
        author_ids: list[int],
        max_id: int | None = None,
        since_id: int | None = None,
    ) -> tuple[list[float | None], list[int]]:
        """Per author, in order: the outbox floor (None: the outbox does not exist) and the
        post id of its newest entry above the floor with since_id < post_id < max_id (0:
        none). Two lists, no object per author: a read-mode page asks this of every followee.
        One server: one command per ``BATCH`` authors, their ids as arguments (the script
        builds the keys) and one string back. A cluster: one read of one entry per outbox.
        """
        if not author_ids:
            return [], []
        args = read_args(max_id, since_id, 1)
        if not self._batched:
            keys = [outbox_key(author_id) for author_id in author_ids]
            return _newest_of(map(slice_of, self._run(self._calls("read", keys, args))))
        replies = self._run(
            [("newest_many", [], (*args[:2], *ids)) for ids in _batches(author_ids)]
        )
        floors: list[float | None] = []
        newest: list[int] = []
        for reply in replies:  # one per BATCH authors
            missing, floor_text, newest_text = reply.split(";")
            start = len(floors)
            floors += map(float, floor_text.split(","))
            newest += map(int, newest_text.split(","))
            for i in ids_of(missing):
                floors[start + i] = None
        return floors, newest

    def read_pulled(
        self,
        authors: list[int],
        feeds: list[str],
        hidden: tuple[str, str] | None,
        now: float,
        max_id: int | None,
        since_id: int | None,
        count: int,
        lower: int | None = None,
    ) -> PulledRead:
        """One server: a pulled page's round in one call (``lua/read_pulled.lua``), the
        ``authors``' outboxes (above ``lower`` if given, else ``since_id``), the shared
        ``feeds`` (renewed), and the reader's set of whom they do not see (``hidden``: its
        key and loaded marker; None: an anonymous reader) asked about what they hold."""
        keys = [hidden[0], *feeds] if hidden else list(feeds)
        marker = (hidden[1], 1) if hidden else ("", 0)
        below = "" if lower is None else f"({lower}"
        args = [*read_args(max_id, since_id, count), now, *marker, below, *authors]
        reply = self._run([("read_pulled", keys, args)])[0]
        outboxes, shared, hidden_text, boosters = reply.split("|")
        slices = [slice_from_text(t) for t in outboxes.split(";")] if authors else []
        read = [slice_from_text(t) for t in shared.split(";")] if feeds else []
        answers = (None, None) if hidden_text == "-" else (ids_of(hidden_text), ids_of(boosters))
        return PulledRead(
            dict(zip(authors, slices, strict=True)),
            dict(zip(feeds, read, strict=True)),
            *(None if found is None else set(found) for found in answers),
        )

    def read_page_sources(
        self,
        user_id: int,
        following: tuple[str, str],
        hidden: str,
        activity: tuple[str, float, float],
        max_id: int | None = None,
        since_id: int | None = None,
        count: int = 20,
        cache_prefix: str | None = None,
        prefetch: int | None = None,
        ready: bool = False,
        tag_feeds: tuple[str, int | None] | None = None,
    ) -> PageSources | ReadyPage | str:
        """The home slice, the pulled authors and (on one server) their outboxes, in one call.

        ``following`` names the reader's followee set and its loaded marker (same hash tag),
        and beside them the reader's tagged set and followed tags (``followed_tags_key``;
        on one server the tags' follower counts and marks too, ``TagCopies``' keys),
        ``hidden`` the set of accounts the reader does not see (same tag and marker): their
        entries are left out as an unfollowed author's are; ``activity`` the readers'
        activity set, now and the cutoff: on one server the call
        also marks the reader active, and with ``cache_prefix`` (the post cache's keys) it
        also returns the cached values of the newest ``prefetch`` (default ``count``) entries
        of the sources and the posts they boost (less unfollowed authors'): what the merge
        keeps is among them. Boosts of accounts the reader does not see, or by boosters whose
        boosts the reader hides, are named in ``hidden_originals`` and ``hidden_boosters``.
        ``MISSING`` when the home or the pulled set must be rebuilt or the followee set
        reloaded; ``TAGS_MISSING`` when the followed tags must be loaded, ``TAGGED_MISSING``
        when the tagged set must be rebuilt; ``HIDDEN_MISSING`` when the hidden set must be
        loaded; ``INACTIVE`` when the reader had been idle (fan-out skipped them: rebuild).
        Renews the home's, the pulled set's and the tagged set's TTL. Reads the reader's
        keyword filters' version too (``filter_version``; the key is on the reader's slot).
        With ``ready`` (one server, ``cache_prefix`` given), a ``ReadyPage`` when the script
        found the whole page of ``count`` as ``merge`` and ``Pages.read`` would make it
        (every outbox found; no hashtag followed, or with ``tag_feeds`` each one counted and
        each pulled one's feed found; no boost on the page; each post's response form
        cached). With ``tag_feeds`` (one server, ``cache_prefix`` given: the hashtags'
        feeds' key prefix and ``FanoutSettings.tag_pull_at``) the feeds of the followed
        hashtags pulled are read too (``PageSources.tag_feeds``), their posts prefetched.
        """
        keys = [home_key(user_id), pulls_key(user_id), following[0], hidden]
        keys += [tagged_key(user_id), followed_tags_key(user_id)]
        args = [*read_args(max_id, since_id, count), user_id, following[1], *activity[1:]]
        if self._batched:
            keys += [activity[0], tag_copies.FOLLOWERS, tag_copies.UNSETTLED]
            if cache_prefix:
                args += [cache_prefix, count if prefetch is None else prefetch, int(ready)]
                if tag_feeds:
                    prefix, pull_at = tag_feeds
                    args += [prefix, "" if pull_at is None else pull_at]
        keys.append(version_key(user_id))  # the last key, on every deployment
        reply = self._run([("read_page", keys, args)])[0]
        text, cached = reply, None
        if (page := ready_page(reply)) is not None:
            return page
        if isinstance(reply, list):
            text, ids, *values = reply
            cached = dict(zip(ids_of(ids), values, strict=True))
        if text in ("", INACTIVE, HIDDEN_MISSING, TAGS_MISSING, TAGGED_MISSING):
            return text or MISSING
        home, pulled, unfollowed, originals, boosters, bound, tags, *rest = text.split(";")
        tagged, states, tagged_hidden, version, feed_tags, feeds_hidden, *outboxes = rest
        tagged_floor, tagged_members = self._tagged_from_text(tagged)
        pulled_ids = ids_of(pulled)
        found, feeds = None, None
        if self._batched:
            readers = [user_id, *pulled_ids]
            outboxes, texts = outboxes[: len(readers)], outboxes[len(readers) :]
            found = dict(zip(readers, map(slice_from_text, outboxes), strict=True))
            names = feed_tags.split(",") if texts else []
            feeds = dict(zip(names, map(slice_from_text, texts), strict=True))
        return PageSources(
            slice_from_text(home),
            pulled_ids,
            set(ids_of(unfollowed)),
            found,
            cached,
            frozenset(ids_of(originals)),
            frozenset(ids_of(boosters)),
            int(bound) if bound else None,
            tags == "1",
            tuple(tagged_members),
            tagged_floor,
            dict(map(_tag_state, states.split(","))) if states else {},
            frozenset(ids_of(tagged_hidden)),
            version_of(version),
            feeds,
            frozenset(ids_of(feeds_hidden)),
        )

    def _tagged_from_text(self, text: str) -> tuple[float, list[tuple[Entry, str]]]:
        """A tagged set's read ("floor,post:author#tag_id,..."; "" when not read): its floor
        and its entries, each with its tag's name."""
        if not text:
            return 0, []
        floor, *members = text.split(",")
        read = [
            (_entry(entry), int(tag_id)) for entry, _, tag_id in (m.partition("#") for m in members)
        ]
        names = self._tag_ids.names(sorted({tag_id for _, tag_id in read})) if read else {}
        return float(floor), [(entry, names[tag_id]) for entry, tag_id in read if tag_id in names]

    # The authors each reader pulls

    def begin_rebuild_pulls(self, user_id: int) -> None:
        """Empty the reader's pulled set, marked as being rebuilt: authors added meanwhile
        are kept, and no read trusts it until ``finish_rebuild_pulls``."""
        self._run([("pulls_rebuild", pulls_key(user_id), ("begin",))])

    def finish_rebuild_pulls(self, user_id: int, author_ids: Iterable[int]) -> bool:
        """Add ``author_ids`` and mark the set loaded; False if it vanished meanwhile."""
        args = ("finish", *author_ids)
        return bool(self._run([("pulls_rebuild", pulls_key(user_id), args)])[0])

    def add_pulled(self, user_ids: Iterable[int], author_id: int) -> None:
        """Readers ``user_ids`` pull ``author_id`` from now on (where their set exists)."""
        keys = [pulls_key(user_id) for user_id in user_ids]
        self._run(self._calls("pulls_add", keys, (author_id,), single="pulls_add"))

    def pulled(self, user_id: int) -> set[int] | None:
        """The authors the reader pulls; None while the set is missing or being rebuilt."""
        members = self._client.smembers(pulls_key(user_id))
        if LOADED not in members or BUILDING in members:
            return None
        return {int(m) for m in members if m != LOADED}

    def remove_pulled(self, user_ids: Iterable[int], author_id: int) -> None:
        pipe = self._client.pipeline(transaction=False)
        for user_id in user_ids:
            pipe.srem(pulls_key(user_id), str(author_id))
        pipe.execute()

    def home_exists(self, user_id: int) -> bool:
        return bool(self._client.exists(home_key(user_id)))

    def drop_homes(self, batch: int = 1000) -> int:
        """Delete every home timeline, ``batch`` keys a round trip; how many. Like an
        eviction: fan-out skips a missing home and the reader's next page rebuilds it. Their
        pending lists go too."""
        dropped = unlink_matching(self._client, home_key("*"), batch)
        unlink_matching(self._client, pending_key("*"), batch)
        return dropped

    def home_footprint(self, user_ids: Iterable[int]) -> tuple[int, int]:
        """Redis memory (``MEMORY USAGE``, bytes: the home and its pending list) and entries
        of these readers' homes, summed over those that exist."""
        user_ids = list(user_ids)
        homes = [home_key(user_id) for user_id in user_ids]
        return self._footprint(homes, [pending_key(user_id) for user_id in user_ids])

    def tagged_footprint(self, user_ids: Iterable[int]) -> tuple[int, int]:
        """The same of these readers' tagged sets, each with its pending list (the text
        encoding: several times a home's bytes per entry)."""
        user_ids = list(user_ids)
        sets = [tagged_key(user_id) for user_id in user_ids]
        return self._footprint(sets, [tagged_pending_key(user_id) for user_id in user_ids])

    def _footprint(self, keys: list[str], beside: list[str] | None = None) -> tuple[int, int]:
        """Memory and entries of the timelines ``keys`` that exist, each counted with the
        key ``beside`` it (its pending list) in its memory."""
        sizes = self._lua.sizes(keys)  # first: folds pending entries, converts old encodings
        pipe = self._client.pipeline(transaction=False)
        for key in [*keys, *(beside or [])]:
            pipe.memory_usage(key)
        used = pipe.execute()
        extra = used[len(keys) :] or [0] * len(keys)
        memory, entries = 0, 0
        for own, more, held in zip(used[: len(keys)], extra, sizes, strict=True):
            if own and held is not None:
                memory, entries = memory + own + (more or 0), entries + held
        return memory, entries

    def _one(self, name: str, key: str, cap: int, floor: int, entries: Iterable[Entry]):
        return self._run([(name, key, add_args(cap, floor, entries))])[0]


def unlink_matching(client, pattern: str, batch: int = 1000) -> int:
    """Delete every key matching ``pattern``, ``batch`` keys a round trip; how many."""
    dropped, found = 0, client.scan_iter(match=pattern, count=batch)
    while keys := list(itertools.islice(found, batch)):
        pipe = client.pipeline(transaction=False)  # a cluster's keys span slots
        for key in keys:
            pipe.unlink(key)
        dropped += sum(pipe.execute())
    return dropped


def add_args(cap: int, floor: int, entries: Iterable[Entry]) -> list:
    args: list = [cap, floor]
    for entry in entries:
        args += [entry.post_id, member_text(entry)]
    return args


def tagged_args(cap: int, floor: float, entries: dict[int, Iterable[Entry]]) -> list:
    """``add_args`` for a tagged set: each tag's entries (by the tag's number)."""
    args: list = [cap, floor]
    for tag_id, tagged in entries.items():
        for entry in tagged:
            args += [entry.post_id, tagged_member(entry, tag_id)]
    return args


def read_args(max_id: int | None, since_id: int | None, count: int) -> tuple:
    upper = "+inf" if max_id is None else f"({max_id}"
    lower = "-inf" if since_id is None else f"({since_id}"
    return (upper, lower, max(count, 0))


def slice_of(reply: list | None) -> Slice:
    if reply is None:
        return Slice([], None)
    return Slice([_entry(member) for member in reply[1:]], float(reply[0]))


def _newest_of(slices: Iterable[Slice]) -> tuple[list[float | None], list[int]]:
    """``newest_in_outboxes`` from slices of one entry each (a cluster reads them one by one)."""
    floors, newest = [], []
    for entries, floor in slices:
        floors.append(floor)
        newest.append(entries[0].post_id if entries and entries[0].post_id > floor else 0)
    return floors, newest


def _batches(items: list) -> list[list]:
    """``items`` (keys, or ids a script builds keys from) in lists of ``BATCH``: what one
    script call on one server takes."""
    return [items[i : i + BATCH] for i in range(0, len(items), BATCH)]


def _json_ids(ids: list[int]) -> str:
    """``ids`` as a JSON array of strings, which a script decodes into its keys' parts."""
    return '["' + '","'.join(map(str, ids)) + '"]' if ids else "[]"


def ids_of(text: str) -> list[int]:
    return [int(part) for part in text.split(",")] if text else []


def _tag_state(text: str) -> tuple[str, tuple[int | None, bool] | None]:
    """A followed tag from the page script: "name" (state not read), or
    "name=followers=unsettled"."""
    name, *state = text.split("=")
    if not state:
        return name, None
    count, unsettled = state
    return name, (int(count) if count else None, unsettled == "1")


def slice_from_text(text: str) -> Slice:
    """A slice from read_many.lua's text: "floor,member,member..."; "" when missing."""
    if not text:
        return Slice([], None)
    floor, _, members = text.partition(",")
    if not members:
        return Slice([], float(floor))
    if members.count(":") > members.count(",") + 1:  # boosts among them
        return Slice([_entry(member) for member in members.split(",")], float(floor))
    numbers = list(map(int, members.replace(":", ",").split(",")))  # posts only: in C
    return Slice(list(map(Entry, numbers[::2], numbers[1::2])), float(floor))
