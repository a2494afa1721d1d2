"""The streaming process's work: who is connected, what reaches each of them, once.

A reader's stream carries what enters their home, as the home page shows it, in every mode:

- *pushed* posts arrive on the reader's channel (delivery publishes them for readers with a
  stream open, ``Streams.publish_update``);
- *pulled* authors' posts arrive once per post on the author's channel; the hub hands each to
  its connected readers who follow the author and pull them (their pulled set, or everyone
  in read mode), and to the author's own streams, as the home shows your own posts;
- the public posts of the hashtags the reader follows arrive on the public channel (below),
  as the home page merges those tags' feeds: the hub keeps its connected readers in an
  index by followed tag and hands each such post to them, whoever its author; the post's
  ``delete`` comes on the public channel too, passed to the streams it was sent to this way
  (those of a reader who follows its author have it on their own channel);
- a post both pushed and pulled (an author being switched), or both followed and tagged, is
  sent once: each reader keeps the ids it was sent lately; authors the reader blocks, is
  blocked by or mutes are left out (the reader's hidden accounts, as a page leaves them out).

The public and hashtag streams carry every post of the public feeds (public, not unlisted,
not a boost; this server's posts are all local, so ``public`` and ``public:local`` are one),
a hashtag stream those with its tag: each post comes once on the public channel with its
tags, while this process holds such a stream or a connected reader follows a hashtag, and
the hub hands it to those streams in memory (an index by stream), rendered once for all;
the reader's hidden accounts are left out there too, by the same rule (``shown``).

A ``list`` stream carries the new posts of a list's members, as the list's page shows them:
each post once, from its author's channel (published once per post whatever the mode), not
from an account hidden from the reader, a boost by the boost rule of the page. Only the
list's owner may open it: its members are read through the API with the owner's token
(``GET /api/v1/lists/:id/accounts``), which answers nobody else's list, and read again on
every ``refresh`` (delivery sends one when the owner's lists change).

A reader's keyword filters (filters v2) apply to what reaches them as to their pages: read
through the API with their token (``GET /api/v2/filters``; a token without ``read:filters``
reads none) when their first stream opens and again on ``filters_changed``, which is passed
on to their ``user`` streams; a status a ``hide`` filter of the stream's context matches
(``home`` for ``user`` and ``list``, ``public`` for the public and hashtag streams) is not
sent, and one that any active filter matches carries ``filtered``, as the API renders it.

The reader's followees, followed hashtags, pulled set and hidden accounts are the Redis
copies pages read (``FolloweeCopies``, ``TimelineStore``, ``HiddenAccounts``), read again
when delivery says they changed (a ``refresh`` on the reader's channel, handled before any
later message) and every ``RELOAD_SECONDS``. Where Redis lacks them, a home read through the
API rebuilds them, with the reader's own token. The API also answers who a token is
(``/oauth/token/info``) and renders statuses (``/api/v1/statuses/:id``) and, with the
reader's token, notifications (``/api/v1/notifications/:id``): this process reads Redis
and nothing else.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import datetime as dt
import html
import json
import logging
import re
import time
from collections.abc import Iterable, Mapping

import httpx

from socialapp.domain import keyword_filters, tags
from socialapp.domain.ids import parse_id
from socialapp.domain.timeline import Entry, shown
from socialapp.services import oauth
from socialapp.stores.followee_copies import FolloweeCopies
from socialapp.stores.hidden import HiddenAccounts
from socialapp.stores.streams import (
    MARKER_SECONDS,
    ShardedSubscription,
    Streams,
    Subscription,
)
from socialapp.stores.timelines import TimelineStore

log = logging.getLogger(__name__)

USER, NOTIFICATION = "user", "user:notification"
STREAMS = {USER: "read:statuses", NOTIFICATION: "read:notifications"}  # Mastodon's scopes
# Streams of the public feeds. Mastodon asks no scope of them; here they need what ``user``
# needs: the reader's hidden accounts are read again through a home read with their token.
PUBLIC, PUBLIC_LOCAL, HASHTAG, HASHTAG_LOCAL = "public", "public:local", "hashtag", "hashtag:local"
PUBLIC_STREAMS = (PUBLIC, PUBLIC_LOCAL)
TAG_STREAMS = (HASHTAG, HASHTAG_LOCAL)
LIST = "list"  # Mastodon's scope for it is ``user``'s; its members are read with ``read:lists``
SCOPES = STREAMS | dict.fromkeys((*PUBLIC_STREAMS, *TAG_STREAMS, LIST), STREAMS[USER])
NOT_YOUR_LIST = "Not authorized to stream this list"  # Mastodon's, for another's or unknown
RECENT = 1000  # post ids a reader's streams remember, to send each post once
RENDERED = 2000  # statuses kept rendered (a post reaches many readers at once)
RELOAD_SECONDS = 300.0  # a reader's copies are read again at least this often
TAGGED_SENT = 10_000  # posts sent to user streams for a followed tag, whose deletes follow
# What a token can be: printable ASCII without spaces (Mastodon's are 43 characters, a /v1
# JWT about 200), far below what the API takes in a header (gunicorn: 8,190 bytes a line).
TOKEN = re.compile(r"[!-~]{1,1024}")


class Refused(Exception):
    """A stream not opened: ``status`` (401 as Mastodon's, 503 when the API cannot say who
    the token is) and the error message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclasses.dataclass(frozen=True)
class Caller:
    user_id: int
    scopes: tuple[str, ...]
    token_hash: str
    token: str
    expires_at: float | None  # unix time; None: until revoked

    def may_read(self, stream: str) -> bool:
        """Whether the token may open ``stream`` (a name of ``SCOPES``)."""
        return oauth.granted([SCOPES[stream]], self.scopes)


def stream_of(name: object, params: Mapping) -> tuple[str, list[str]]:
    """The key a stream is held under and its name as Mastodon's events name it (``stream``:
    ``["hashtag", "Café"]``, the tag as the client spelled it); ``Refused`` (400, Mastodon's
    message) for a stream this server does not serve or a tag missing or not a tag.

    A tag's stream is keyed by its normal form: ``Café`` and ``CAFÉ`` are one. A ``list``
    stream is keyed by its list's id (``["list", "<id>"]`` as the client wrote it), its owner
    checked when it is subscribed (``Hub.subscribe``); what cannot be a list's id is refused
    as another's list is, as Mastodon refuses it (401)."""
    if not isinstance(name, str):
        raise Refused(400, "Unknown stream type")
    if name in STREAMS or name in PUBLIC_STREAMS:
        return name, [name]
    if name == LIST:
        raw = params.get("list")
        if raw is None or (isinstance(raw, str | int | float) and not raw):  # falsy in JS
            raise Refused(400, "Missing list name parameter")
        if isinstance(raw, int) and not isinstance(raw, bool):
            raw = str(raw)
        list_id = parse_id(raw) if isinstance(raw, str) else None
        if list_id is None:
            raise Refused(401, NOT_YOUR_LIST)
        return _listed(list_id), [name, raw]
    if name not in TAG_STREAMS:
        raise Refused(400, "Unknown stream type")
    tag = params.get("tag")
    if not tag or not isinstance(tag, str):
        raise Refused(400, "Missing tag name parameter")
    normal = tags.named(tag)
    if normal is None:
        raise Refused(400, "Invalid tag name parameter")
    return _tagged(name, normal), [name, tag]


def _tagged(stream: str, tag: str) -> str:
    """The key of ``stream`` (a hashtag stream) for ``tag`` in its normal form."""
    return f"{stream}#{tag}"  # a tag has no "#"


def _listed(list_id: int) -> str:
    """The key of the ``list`` stream of ``list_id``."""
    return f"{LIST}#{list_id}"


def _list_of(stream: str) -> int | None:
    """The list id of a ``list`` stream's key (None for any other stream)."""
    name, _, list_id = stream.partition("#")
    return int(list_id) if name == LIST else None


class Gateway:
    """What the streaming process asks the API server: who a token is, a status rendered
    as the Mastodon API renders it, and a home read (which rebuilds a reader's copies)."""

    def __init__(
        self,
        api_url: str,
        public_url: str = "",
        timeout: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """``public_url``: the API as clients reach it, when that is not ``api_url`` (a
        status's links name the host it was asked on, and the scheme a proxy forwarded);
        ``transport``: httpx's, a test's stand-in for the API."""
        limits = httpx.Limits(max_connections=20, max_keepalive_connections=20)
        public = httpx.URL(public_url or api_url)
        headers = {"Host": public.netloc.decode(), "X-Forwarded-Proto": public.scheme}
        self._http = httpx.AsyncClient(
            base_url=api_url, timeout=timeout, limits=limits, headers=headers, transport=transport
        )

    async def caller(self, token: str) -> Caller | None:
        """Who ``token`` speaks for; None if it cannot be a token (``TOKEN``: it is never
        put in a header) or if the API refuses it (401 or 403: unknown or revoked; any other
        4xx: a request it cannot take). An API that fails (5xx, unreachable) raises
        ``httpx.HTTPError``."""
        if not TOKEN.fullmatch(token):
            return None
        response = await self._http.get("/oauth/token/info", headers=_bearer(token))
        if response.is_client_error:
            return None
        response.raise_for_status()
        info = response.json()
        owner, expires_in = info.get("resource_owner_id"), info.get("expires_in")
        return Caller(
            user_id=int(owner) if owner else 0,
            scopes=tuple(info["scope"]),
            token_hash=oauth.digest(token),
            token=token,
            expires_at=None if expires_in is None else time.time() + expires_in,
        )

    async def status(self, post_id: int) -> str | None:
        """The post as a Mastodon Status (JSON text); None if it is gone."""
        response = await self._http.get(f"/api/v1/statuses/{post_id}")
        if response.status_code == 404:
            return None
        response.raise_for_status()
        return response.text.strip()

    async def notification(self, token: str, notification_id: int) -> str | None:
        """The reader's notification as a Mastodon Notification (JSON text), read with the
        reader's token; None if it is gone (dismissed, or its post deleted)."""
        response = await self._http.get(
            f"/api/v1/notifications/{notification_id}", headers=_bearer(token)
        )
        if response.status_code in (401, 403, 404):
            return None
        response.raise_for_status()
        return response.text.strip()

    async def list_members(self, token: str, list_id: int) -> set[int] | None:
        """The accounts on the list, read with its owner's token; None if the API refuses
        (another's list, an unknown one, a token that may not read lists)."""
        response = await self._http.get(
            f"/api/v1/lists/{list_id}/accounts", params={"limit": 0}, headers=_bearer(token)
        )
        if response.is_client_error:
            return None
        response.raise_for_status()
        return {int(account["id"]) for account in response.json()}

    async def filters(self, token: str) -> list[dict] | None:
        """The reader's keyword filters (Mastodon's Filter entities), read with their token;
        None if the API refuses (a token that may not read them)."""
        response = await self._http.get("/api/v2/filters", headers=_bearer(token))
        if response.is_client_error:
            return None
        response.raise_for_status()
        return response.json()

    async def read_home(self, token: str) -> None:
        response = await self._http.get(
            "/api/v1/timelines/home", params={"limit": 1}, headers=_bearer(token)
        )
        if response.status_code != 200:
            log.info("home read to rebuild a stream's sources answered %s", response.status_code)

    async def close(self) -> None:
        await self._http.aclose()


def _bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


HEARTBEAT = ("", "", None)  # an item of a stream's buffer: time for a heartbeat
# A full buffer drops a stream whose writer is stuck writing to its client; one waiting for
# a status to render (the API slow for everyone) is dropped only at this many buffers.
STALLED = 4


@dataclasses.dataclass(eq=False)
class Connection:
    """One open stream (an SSE response or a WebSocket): its events wait in a bounded
    buffer; a consumer that lets it fill is disconnected (``STALLED``). The hub's ticks ask
    for a heartbeat where nothing was sent since the last one (no timer per stream)."""

    caller: Caller
    buffer: int
    streams: set[str] = dataclasses.field(default_factory=set)  # their keys (``stream_of``)
    labels: dict[str, list[str]] = dataclasses.field(default_factory=dict)  # where not [key]
    closed: str | None = None  # why, once closed
    aborted: bool = False  # closed while its writer may be stuck: the writer was cancelled
    writing: bool = False  # the writer took an event and is writing it to the client
    writer: asyncio.Task | None = None  # the task writing the stream, cancelled on abort
    _events: collections.deque = dataclasses.field(init=False, default_factory=collections.deque)
    _waiter: asyncio.Future | None = dataclasses.field(init=False, default=None)
    _quiet: bool = dataclasses.field(init=False, default=True)  # nothing sent since the tick

    @property
    def reader(self) -> int:
        return self.caller.user_id

    def label(self, stream: str) -> list[str]:
        """How a WebSocket event names the stream it is on (Mastodon's ``stream``)."""
        return self.labels.get(stream) or [stream]

    def offer(self, stream: str, event: str, payload) -> None:
        """Queue an event for ``stream`` if subscribed; ``payload`` is text or a future that
        renders it."""
        if self.closed or stream not in self.streams:
            return
        waiting = len(self._events)
        if waiting >= self.buffer and (self.writing or waiting >= STALLED * self.buffer):
            self.abort("slow consumer: the stream's buffer is full")
            return
        self._events.append((stream, event, payload))
        self._wake()

    def tick(self) -> None:
        """A heartbeat interval passed: ask for one if the stream was quiet through it."""
        if self._quiet and not self._events and not self.closed:
            self._events.append(HEARTBEAT)
            self._wake()
        self._quiet = True

    def close(self, reason: str) -> None:
        if not self.closed:
            self.closed = reason
            self._events.clear()
            self._wake()

    def abort(self, reason: str) -> None:
        """Close it and cancel its writer, which may wait for a client that reads nothing:
        the connection is dropped, not kept with what it holds."""
        self.close(reason)
        self.aborted = True
        if self.writer is not None and not self.writer.done():
            self.writer.cancel()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def next_event(self) -> tuple[str, str, str] | None:
        """The next event with its payload rendered, or None for a heartbeat; raises
        ``ConnectionClosed`` once the hub closed it."""
        self.writing = False  # back for more: the last event left
        while True:
            if self.closed:
                raise ConnectionClosed(self.closed)
            if not self._events:
                self._waiter = asyncio.get_running_loop().create_future()
                try:
                    await self._waiter
                finally:
                    self._waiter = None
                continue
            item = self._events.popleft()
            if item is HEARTBEAT:
                return None
            stream, event, payload = item
            if isinstance(payload, asyncio.Future):
                payload = await payload
                if self.closed:  # while it rendered
                    raise ConnectionClosed(self.closed)
            if payload is not None:
                self._quiet, self.writing = False, True
                return stream, event, payload


class ConnectionClosed(Exception):
    pass


@dataclasses.dataclass(eq=False)
class ReaderView:
    """What the hub knows of one connected reader, shared by their connections."""

    reader: int
    token: str
    followees: set[int] = dataclasses.field(default_factory=set)
    tags: set[str] = dataclasses.field(default_factory=set)  # followed hashtags, normal forms
    pulled: set[int] = dataclasses.field(default_factory=set)
    hidden: dict[int, float] = dataclasses.field(default_factory=dict)
    boosts_hidden: set[int] = dataclasses.field(default_factory=set)  # reblogs=false follows
    connections: set[Connection] = dataclasses.field(default_factory=set)
    sent: collections.OrderedDict = dataclasses.field(default_factory=collections.OrderedDict)
    indexed: set[int] = dataclasses.field(default_factory=set)  # authors it is indexed under
    tags_indexed: set[str] = dataclasses.field(default_factory=set)  # tags it is indexed under
    loaded_at: float = 0.0
    lists: dict[int, set[int]] = dataclasses.field(default_factory=dict)  # streamed: members
    list_sent: dict[int, collections.OrderedDict] = dataclasses.field(default_factory=dict)
    filters: keyword_filters.Matcher = keyword_filters.NO_FILTERS

    @property
    def authors(self) -> set[int]:
        """Whose author channels this reader needs: everyone followed, themself, and the
        members of the lists they stream."""
        return {*self.followees, self.reader}.union(*self.lists.values())

    def streamed_lists(self) -> set[int]:
        """The lists the reader's connections stream."""
        return {
            list_id
            for connection in self.connections
            for stream in connection.streams
            if (list_id := _list_of(stream)) is not None
        }

    def hidden_among(self, authors: Iterable[int], now: float) -> set[int]:
        """Which of ``authors`` are hidden from the reader at ``now``."""
        return {a for a in authors if self.hidden.get(a, 0) > now}

    def offer(self, streams: Iterable[str], event: str, payload) -> int:
        """Queue the event on every connection subscribed to one of ``streams``; to how
        many connections."""
        for connection in list(self.connections):
            for stream in streams:
                connection.offer(stream, event, payload)
        return len(self.connections)


def _entry(post_id: int, author: int, message: dict) -> Entry:
    return Entry(post_id, author, message.get("boost_of", 0), message.get("original_author", 0))


def _first_shown(
    entry: Entry, gone: set[int], hidden: set[int], boosts_hidden: set[int], sent
) -> bool:
    """Whether a stream that was sent ``sent`` (the ids it remembers, which now hold the
    entry's) sends ``entry``: shown by the rule of every page (``shown``), not sent yet,
    and a boost only of a post the stream has not sent (itself or boosted)."""
    if not shown(entry, gone, hidden, boosts_hidden) or not _first_time(sent, entry.post_id):
        return False
    return not entry.boost_of or _first_time(sent, entry.boost_of)


def _first_time(sent: collections.OrderedDict, post_id: int) -> bool:
    """Whether ``post_id`` is new to ``sent`` (the last ``RECENT`` ids), which now holds it."""
    if post_id in sent:
        return False
    sent[post_id] = None
    if len(sent) > RECENT:
        sent.popitem(last=False)
    return True


class Hub:
    """Every open stream of this process, fed from Redis pub/sub."""

    def __init__(
        self,
        streams: Streams,
        subscription: Subscription | ShardedSubscription,
        timelines: TimelineStore,
        followee_copies: FolloweeCopies,
        hidden: HiddenAccounts,
        gateway: Gateway,
        buffer: int = 256,
        heartbeat: float = 15.0,
        clock=time.time,
    ) -> None:
        self._streams = streams
        self._subscription = subscription
        self._timelines = timelines
        self._followee_copies = followee_copies
        self._hidden = hidden
        self._gateway = gateway
        self._buffer = buffer
        self._heartbeat = heartbeat
        self._clock = clock
        self._views: dict[int, ReaderView] = {}
        # Events queued on streams by kind, and streams dropped as slow consumers: /metrics
        self.counts: collections.Counter = collections.Counter()
        self._by_author: dict[int, set[int]] = collections.defaultdict(set)
        # Readers by the hashtags they follow, and the posts sent to user streams for one of
        # them (post: its author and those readers), whose deletes come on the public channel
        self._by_tag: dict[str, set[int]] = collections.defaultdict(set)
        self._tag_sent: collections.OrderedDict[int, tuple[int, set[int]]] = (
            collections.OrderedDict()
        )
        # Public and hashtag streams by key, and the public posts they were sent lately (a
        # delivery run again publishes its post again)
        self._public: dict[str, set[Connection]] = {}
        self._public_sent: collections.OrderedDict = collections.OrderedDict()
        self._public_heard = False  # subscribed to the public channel (streams or tags need it)
        self._public_lock = asyncio.Lock()  # not behind a reader's load (``_lock``)
        self._rendered: collections.OrderedDict[int, asyncio.Future] = collections.OrderedDict()
        self._lock = asyncio.Lock()  # subscriptions change one reader at a time
        self._tasks: list[asyncio.Task] = []

    # Lifetime ------------------------------------------------------------------------------
    async def start(self) -> None:
        await self._subscription.start()
        self._tasks = [
            asyncio.create_task(self._listen()),
            asyncio.create_task(self._keep_marked()),
            asyncio.create_task(self._tick()),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        readers = list(self._views)
        self.close_all()
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self._streams.mark_closed, readers)
        await self._subscription.close()
        await self._gateway.close()

    def close_all(self) -> None:
        """End every stream (the server is stopping): clients reconnect elsewhere."""
        for view in self._views.values():
            for connection in view.connections:
                connection.close("the streaming server is stopping")

    def figures(self) -> tuple[int, int, collections.Counter]:
        """Streams open, readers they belong to, and ``counts``: what /metrics shows."""
        return self.connections, len(self._views), self.counts

    @property
    def connections(self) -> int:
        return sum(len(view.connections) for view in self._views.values())

    # Connections -----------------------------------------------------------------------------
    async def authenticate(self, token: str | None, stream: str | None) -> Caller:
        """The caller of ``token``, who must be a user with a read scope for ``stream``
        (any read scope when None); ``Refused`` otherwise, with Mastodon's messages."""
        if not token:
            raise Refused(401, "Missing access token")
        try:
            caller = await self._gateway.caller(token)
        except httpx.HTTPError as error:
            log.warning("streaming: the API did not say who a token is: %r", error)
            raise Refused(503, "The access token could not be checked") from error
        if caller is None or not caller.user_id:
            raise Refused(401, "Invalid access token")
        if stream is not None and not caller.may_read(stream):
            raise Refused(401, "Access token does not have the required scopes")
        if stream is None and not any(caller.may_read(s) for s in STREAMS):
            raise Refused(401, "Access token does not have the required scopes")
        return caller

    async def open(self, caller: Caller, streams: Iterable[str] = ()) -> Connection:
        connection = Connection(caller, self._buffer, set(streams))
        async with self._lock:
            view = self._views.get(caller.user_id)
            if view is None:
                view = self._views[caller.user_id] = ReaderView(caller.user_id, caller.token)
                await self._subscription.follow(readers=[caller.user_id])
                await self._load(view)  # subscribed to every channel before marked open
                await asyncio.to_thread(self._streams.mark_open, [caller.user_id])
            view.connections.add(connection)
        if caller.expires_at is not None:
            delay = max(0.0, caller.expires_at - self._clock())
            asyncio.get_running_loop().call_later(delay, connection.close, "the token expired")
        return connection

    async def subscribe(self, connection: Connection, stream: str, label: list[str]) -> None:
        """Add a stream (its key and name, ``stream_of``'s) to an open connection; a list's
        stream only for its owner (``Refused``: 401 as Mastodon's, 503 when the API fails)."""
        list_id = _list_of(stream)
        if list_id is not None:
            await self._subscribe_list(connection, list_id)
        connection.streams.add(stream)
        if label != [stream]:
            connection.labels[stream] = label
        if stream not in STREAMS and list_id is None:
            self._public.setdefault(stream, set()).add(connection)
            await self._hear_public()

    async def _subscribe_list(self, connection: Connection, list_id: int) -> None:
        """Read the list's members with the caller's token (the API answers only its
        owner), unless their view streams it already, and follow their channels."""
        async with self._lock:
            view = self._views.get(connection.reader)
            if view is None or list_id in view.lists:
                return
            try:
                members = await self._gateway.list_members(view.token, list_id)
            except httpx.HTTPError as error:
                log.warning("streaming: list %s not read: %r", list_id, error)
                raise Refused(503, "The list could not be read") from error
            if members is None:
                raise Refused(401, NOT_YOUR_LIST)
            view.lists[list_id] = members
            view.list_sent[list_id] = collections.OrderedDict()
            await self._reindex(view, view.authors)

    async def unsubscribe(self, connection: Connection, stream: str) -> None:
        connection.streams.discard(stream)
        connection.labels.pop(stream, None)
        await self._unindex(connection, [stream])
        if _list_of(stream) is not None:
            async with self._lock:
                view = self._views.get(connection.reader)
                if view is not None:
                    await self._drop_lists(view)

    async def _drop_lists(self, view: ReaderView) -> None:
        """Forget the lists none of the reader's connections streams any more."""
        gone = set(view.lists) - view.streamed_lists()
        for list_id in gone:
            del view.lists[list_id], view.list_sent[list_id]
        if gone:
            await self._reindex(view, view.authors)

    async def _unindex(self, connection: Connection, streams: Iterable[str]) -> None:
        """Take the connection off these public streams."""
        for stream in list(streams):
            held = self._public.get(stream)
            if held is not None:
                held.discard(connection)
                if not held:
                    del self._public[stream]
        await self._hear_public()

    async def _hear_public(self) -> None:
        """Listen to the public channel while a public or hashtag stream is held here, or a
        connected reader follows a hashtag."""
        async with self._public_lock:
            if self._public_heard != bool(self._public or self._by_tag):
                await self._subscription.follow_public(not self._public_heard)
                self._public_heard = not self._public_heard

    async def close(self, connection: Connection) -> None:
        self.counts["dropped"] += connection.aborted
        connection.close(connection.closed or "closed")
        await self._unindex(connection, connection.streams)
        async with self._lock:
            view = self._views.get(connection.reader)
            if view is None:
                return
            view.connections.discard(connection)
            if view.connections:
                await self._drop_lists(view)
                return
            del self._views[view.reader]
            await self._reindex(view, set())
            await self._retag(view, set())
            await self._subscription.unfollow(readers=[view.reader])
            await asyncio.to_thread(self._streams.mark_closed, [view.reader])

    # What reaches whom -----------------------------------------------------------------------
    async def _listen(self) -> None:
        while True:
            try:
                async for kind, key, message in self._subscription.messages():
                    await self._dispatch(kind, key, message)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("streaming: the pub/sub connection failed; listening again")
                await asyncio.sleep(1)

    async def _dispatch(self, kind: str, key: int | None, message) -> None:
        if kind == "revoked":
            for view in self._views.values():
                for connection in list(view.connections):
                    if connection.caller.token_hash == message:
                        connection.close("the token was revoked")
        elif kind == "author":
            self._on_post(key, message)
        elif kind == "public":
            self._on_public(message)
        else:
            view = self._views.get(key)
            if view is not None:
                await self._on_reader_event(view, message)

    def _on_post(self, author: int, message: dict) -> None:
        """A new post, once: to the author's streams and to the connected readers pulling
        them."""
        post_id, everyone = message["post_id"], message["everyone"]
        for reader in list(self._by_author.get(author, ())):
            view = self._views.get(reader)
            if view is None:
                continue
            pulls = author in view.followees and (everyone or author in view.pulled)
            if author == reader or pulls:
                self._update(view, post_id, author, message)
            for list_id, members in view.lists.items():
                if author in members:
                    self._list_update(view, list_id, post_id, author, message)

    def _on_public(self, message: dict) -> None:
        """A post of the public feeds (or its delete), to the public streams and to the
        hashtag streams of its tags: rendered once, left out of a stream whose reader hides
        its author."""
        post_id = message["post_id"]
        if message.get("event") == "delete":  # its tags are gone: every such stream
            for stream, connections in list(self._public.items()):
                for connection in list(connections):
                    connection.offer(stream, "delete", str(post_id))
                    self.counts["delete"] += 1
            self._tagged_delete(post_id)
            return
        if not _first_time(self._public_sent, post_id):
            return
        author, now, rendered = message["author_id"], self._clock(), None
        entry = Entry(post_id, author)  # public feeds hold no boosts
        tagged = [_tagged(stream, tag) for tag in message.get("tags", ()) for stream in TAG_STREAMS]
        streams = [*PUBLIC_STREAMS, *tagged]
        for stream in streams:
            for connection in list(self._public.get(stream, ())):
                view = self._views.get(connection.reader)
                if view is None or not shown(entry, view.hidden_among([author], now)):
                    continue
                rendered = rendered or self._render(post_id)
                connection.offer(stream, "update", _filtered(view, "public", rendered))
                self.counts["update"] += 1
        followers = set().union(*(self._by_tag.get(tag, ()) for tag in message.get("tags", ())))
        for reader in followers:
            view = self._views.get(reader)
            if view is not None:
                self._tagged_update(view, entry, now)

    def _tagged_update(self, view: ReaderView, entry: Entry, now: float) -> None:
        """A public post with a hashtag the reader follows, to their user streams as their
        home page shows it: whoever its author, unless hidden from the reader, and once (a
        post of an author they follow too comes once, whichever way first)."""
        hidden = view.hidden_among([entry.author_id], now)
        if not shown(entry, hidden) or not _first_time(view.sent, entry.post_id):
            return
        rendered = _filtered(view, "home", self._render(entry.post_id))
        self.counts["update"] += view.offer([USER], "update", rendered)
        _, readers = self._tag_sent.setdefault(entry.post_id, (entry.author_id, set()))
        readers.add(view.reader)
        if len(self._tag_sent) > TAGGED_SENT:
            self._tag_sent.popitem(last=False)

    def _tagged_delete(self, post_id: int) -> None:
        """A deleted post's ``delete`` to the user streams it was sent to for a followed
        hashtag; not to a reader who follows its author (or wrote it): their own channel
        carries it."""
        author, readers = self._tag_sent.pop(post_id, (0, set()))
        for reader in readers:
            view = self._views.get(reader)
            if view is not None and author != reader and author not in view.followees:
                self.counts["delete"] += view.offer([USER], "delete", str(post_id))

    async def _on_reader_event(self, view: ReaderView, message: dict) -> None:
        event = message["event"]
        if event == "update":
            self._update(view, message["post_id"], message["author_id"], message)
        elif event == "delete":  # a list's stream too (a client ignores an id it did not show)
            streams = [USER, *map(_listed, view.lists)]
            self.counts["delete"] += view.offer(streams, "delete", str(message["post_id"]))
        elif event == "notification":
            rendered = self._notification(view.token, message["notification_id"])
            rendered = asyncio.ensure_future(rendered)
            self.counts["notification"] += view.offer(
                [USER, NOTIFICATION], "notification", rendered
            )
        elif event == "refresh":
            async with self._lock:
                if view.reader in self._views:
                    await self._load(view)
        elif event == "filters_changed":
            view.filters = await self._filters(view.token)
            self.counts["filters_changed"] += view.offer([USER], "filters_changed", "")

    def _update(self, view: ReaderView, post_id: int, author: int, message: dict) -> None:
        """Send a post once, as a page would show it: not from an account hidden or no longer
        followed; a boost not of a hidden account's post nor by a followee whose boosts are
        hidden, and not of a post this stream already sent (itself or boosted)."""
        entry = _entry(post_id, author, message)
        hidden = view.hidden_among((entry.author_id, entry.original_author), self._clock())
        followed = author == view.reader or author in view.followees
        gone = hidden if followed else {author}  # unfollowed meanwhile: the page drops it too
        if _first_shown(entry, gone, hidden, view.boosts_hidden, view.sent):
            rendered = _filtered(view, "home", self._render(post_id))
            self.counts["update"] += view.offer([USER], "update", rendered)

    def _list_update(
        self, view: ReaderView, list_id: int, post_id: int, author: int, message: dict
    ) -> None:
        """Send a member's post once on the list's stream, as the list's page shows it: not
        from an account hidden from the reader, a boost by the home's boost rule."""
        entry = _entry(post_id, author, message)
        hidden = view.hidden_among((entry.author_id, entry.original_author), self._clock())
        if _first_shown(entry, hidden, hidden, view.boosts_hidden, view.list_sent[list_id]):
            rendered = _filtered(view, "home", self._render(post_id))
            offered = view.offer([_listed(list_id)], "update", rendered)
            self.counts["update"] += offered

    def _render(self, post_id: int) -> asyncio.Future:
        """The post as a Status, rendered once for every stream it reaches."""
        found = self._rendered.get(post_id)
        if found is None:
            found = self._rendered[post_id] = asyncio.ensure_future(self._fetch(post_id))
            if len(self._rendered) > RENDERED:
                self._rendered.popitem(last=False)
        return found

    async def _fetch(self, post_id: int) -> str | None:
        try:
            return await self._gateway.status(post_id)
        except httpx.HTTPError as error:
            log.warning("streaming: status %s not rendered: %r", post_id, error)
            return None

    async def _filters(self, token: str) -> keyword_filters.Matcher:
        """The reader's keyword filters, compiled (none if the API cannot say)."""
        try:
            found = await self._gateway.filters(token)
        except httpx.HTTPError as error:
            log.warning("streaming: a reader's filters not read: %r", error)
            return keyword_filters.NO_FILTERS
        return (
            keyword_filters.Matcher(map(_stored_filter, found))
            if found
            else keyword_filters.NO_FILTERS
        )

    async def _notification(self, token: str, notification_id: int) -> str | None:
        try:
            return await self._gateway.notification(token, notification_id)
        except httpx.HTTPError as error:
            log.warning("streaming: notification %s not rendered: %r", notification_id, error)
            return None

    # A reader's copies -----------------------------------------------------------------------
    async def _load(self, view: ReaderView) -> None:
        """Read the reader's followees, followed hashtags, pulled set and hidden accounts
        (rebuilt by a home read where Redis lacks them), follow the channels of whom they
        follow, and index them under their hashtags."""
        copies = await asyncio.to_thread(self._copies, view.reader)
        if copies[0] is None or copies[2] is None or copies[4] is None:
            await self._gateway.read_home(view.token)
            copies = await asyncio.to_thread(self._copies, view.reader)
        followees, pulled, hidden, boosts_hidden, tags = copies
        view.followees, view.pulled = followees or set(), pulled or set()
        view.tags = set(tags or ())  # still None: a follow raced the read, whose refresh comes
        view.hidden, view.loaded_at = hidden or {}, self._clock()
        view.boosts_hidden = boosts_hidden
        view.filters = await self._filters(view.token)
        for list_id in list(view.lists):  # members changed, or the list was deleted
            try:
                members = await self._gateway.list_members(view.token, list_id)
            except httpx.HTTPError as error:
                log.warning("streaming: list %s not read again: %r", list_id, error)
                continue
            view.lists[list_id] = members or set()
        await self._reindex(view, view.authors)
        await self._retag(view, view.tags)

    def _copies(self, reader: int):
        return (
            self._followee_copies.followees(reader),
            self._timelines.pulled(reader),
            self._hidden.until(reader),
            self._hidden.boosts_hidden(reader),
            self._followee_copies.streamed_tags(reader),
        )

    async def _reindex(self, view: ReaderView, authors: set[int]) -> None:
        """Index the reader under ``authors``; follow channels that gained their first
        reader, leave those that lost their last."""
        before, view.indexed = view.indexed, set(authors)
        new, gone = [], []
        for author in authors - before:
            if not self._by_author[author]:
                new.append(author)
            self._by_author[author].add(view.reader)
        for author in before - authors:
            self._by_author[author].discard(view.reader)
            if not self._by_author[author]:
                del self._by_author[author]
                gone.append(author)
        await self._subscription.follow(authors=new)
        await self._subscription.unfollow(authors=gone)

    async def _retag(self, view: ReaderView, tags: set[str]) -> None:
        """Index the reader under the hashtags ``tags``; listen to the public channel while
        any reader here is indexed under one."""
        before, view.tags_indexed = view.tags_indexed, set(tags)
        for tag in tags - before:
            self._by_tag[tag].add(view.reader)
        for tag in before - tags:
            self._by_tag[tag].discard(view.reader)
            if not self._by_tag[tag]:
                del self._by_tag[tag]
        if tags != before:
            await self._hear_public()

    async def _tick(self) -> None:
        """Every ``heartbeat`` seconds, a heartbeat for each stream that was quiet."""
        while True:
            await asyncio.sleep(self._heartbeat)
            for view in list(self._views.values()):
                for connection in list(view.connections):
                    connection.tick()

    async def _keep_marked(self) -> None:
        """Renew the markers of the connected readers, and read their copies again now and
        then (a mute that ended, a copy rebuilt)."""
        while True:
            await asyncio.sleep(MARKER_SECONDS / 3)
            try:
                await asyncio.to_thread(self._streams.mark_open, list(self._views))
                stale = self._clock() - RELOAD_SECONDS
                for view in [v for v in self._views.values() if v.loaded_at < stale]:
                    async with self._lock:
                        if view.reader in self._views:
                            await self._load(view)
            except Exception:
                log.exception("streaming: renewing the stream markers failed")


def _stored_filter(entity: dict) -> dict:
    """A Filter entity as the matcher takes a stored filter (its entity kept, less its
    keywords and statuses, for the FilterResults it renders)."""
    expires_at = entity.get("expires_at")
    return {
        "context": entity["context"],
        "action": entity["filter_action"],
        "expires_at": None if expires_at is None else dt.datetime.fromisoformat(expires_at),
        "keywords": entity.get("keywords", []),
        "statuses": [{"status_id": int(s["status_id"])} for s in entity.get("statuses", [])],
        "entity": {k: v for k, v in entity.items() if k not in ("keywords", "statuses")},
    }


def _filtered(view: ReaderView, context: str, rendered: asyncio.Future) -> asyncio.Future:
    """The rendered status as this reader's stream in ``context`` sends it: None (not sent)
    if a ``hide`` filter of theirs matches it there, else with ``filtered``; the shared
    rendering itself when they have no filters."""
    if view.filters is keyword_filters.NO_FILTERS:
        return rendered
    return asyncio.ensure_future(_apply(view.filters, context, rendered))


async def _apply(matcher: keyword_filters.Matcher, context: str, rendered: asyncio.Future):
    text = await rendered
    return None if text is None else with_filters(matcher, context, text, dt.datetime.now(dt.UTC))


def with_filters(
    matcher: keyword_filters.Matcher, context: str, rendered: str, now: dt.datetime
) -> str | None:
    """A rendered Status (JSON text) with the matching filters as ``filtered`` (a boost's
    ``reblog`` too); None when one whose action is ``hide`` matches it in ``context``."""
    status = json.loads(rendered)
    reblog = status.get("reblog")
    proper = reblog or status
    text = _plain(proper.get("content", ""))
    ids = [int(status["id"]), *([int(reblog["id"])] if reblog else [])]
    found = matcher.matches(text, ids, now)
    if keyword_filters.hides(found, context):
        return None
    status["filtered"] = [_result(match) for match in found]
    if reblog:
        reblog["filtered"] = [_result(m) for m in matcher.matches(text, ids[1:], now)]
    return json.dumps(status)


def _result(match: keyword_filters.Match) -> dict:
    statuses = match.status_matches
    return {
        "filter": match.filter["entity"],
        "keyword_matches": match.keyword_matches,
        "status_matches": None if statuses is None else [str(i) for i in statuses],
    }


def _plain(content: str) -> str:
    """A status's text from its ``content`` (the API's: the text escaped, in a paragraph,
    line breaks as ``<br>``), as the API matches the post's own text."""
    inner = content.removeprefix("<p>").removesuffix("</p>")
    return html.unescape(inner.replace("<br>", "\n"))
