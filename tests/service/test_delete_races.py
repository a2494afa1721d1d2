"""A delete racing a read or a delivery, each interleaving forced at its pause point
(``socialapp.jitter``): once the delete has returned, no read shows the post, and nothing
the race left behind brings it back. A like racing a read leaves no old count cached."""

from __future__ import annotations

import dataclasses
import json
import threading
import time

import pytest

from socialapp import jitter
from socialapp.domain.fanout import MODES
from socialapp.domain.timeline import Entry
from socialapp.services import fanout, operators
from socialapp.stores.post_cache import post_key
from socialapp.stores.streams import reader_channel
from socialapp.stores.timelines import home_key
from tests.helpers_timelines import timeline_members

WAIT = 60.0  # seconds a forced interleaving may take on a loaded machine


def home_ids(client, account) -> list[int]:
    response = client.get("/v1/timeline/home", headers=account.headers)
    assert response.status_code == 200, response.json
    return [int(post["id"]) for post in response.json["items"]]


def post(client, account, text: str) -> int:
    response = client.post("/v1/posts", json={"text": text}, headers=account.headers)
    assert response.status_code == 201, response.json
    return int(response.json["id"])


class HoldAt:
    """A jitter delay that parks the thread named ``thread_name`` at ``point`` until
    ``release`` is set; ``reached`` says it got there."""

    def __init__(self, point: str, thread_name: str) -> None:
        self.point, self.thread_name = point, thread_name
        self.reached, self.release = threading.Event(), threading.Event()

    def __call__(self, point: str) -> None:
        if point == self.point and threading.current_thread().name == self.thread_name:
            self.reached.set()
            assert self.release.wait(WAIT), f"never released from {point}"


@pytest.fixture
def pair(app, client, signup, components):
    """ada and bob, bob following ada and active (fan-out delivers to him); no worker runs,
    so a retraction stays queued as it does on a busy machine."""
    ada, bob = signup(), signup()
    home_ids(client, bob)
    assert client.put(f"/v1/me/following/{ada.id}", headers=bob.headers).status_code == 204
    return ada, bob


@pytest.mark.parametrize("mode", MODES)
def test_a_read_that_loaded_the_post_before_the_delete_cannot_cache_it(
    app, client, components, pair, mode
):
    c, (ada, bob) = components, pair
    operators.change_fanout(c.fanout_settings, c.fanout, mode=mode)
    gone = post(client, ada, "soon gone")
    c.feeds.push(Entry(gone, int(ada.id)), [int(bob.id)])  # delivered, as a chunk would
    c.redis.delete(post_key(gone))  # not cached: the read loads it from MongoDB
    hold = HoldAt("hydrate.loaded", "reader")
    seen: list[list[int]] = []
    reader = threading.Thread(
        target=lambda: seen.append(home_ids(app.test_client(), bob)), name="reader"
    )
    with jitter.installed(hold):
        reader.start()
        assert hold.reached.wait(WAIT), "the read never loaded the post from MongoDB"
        assert client.delete(f"/v1/posts/{gone}", headers=ada.headers).status_code == 204
        hold.release.set()
        reader.join(WAIT)
    assert seen and gone in seen[0]  # the read began before the delete: it may show it
    assert gone not in home_ids(client, bob)  # the retraction is still queued: nothing shows it
    assert gone not in home_ids(client, bob)


def home_like_counts(client, account) -> dict[int, int]:
    response = client.get("/v1/timeline/home", headers=account.headers)
    assert response.status_code == 200, response.json
    return {int(post["id"]): post["like_count"] for post in response.json["items"]}


def test_a_read_that_loaded_the_post_before_a_like_cannot_cache_the_old_count(
    app, client, components, pair, signup
):
    """The like is stored and acknowledged while the read holds the post as it was: the
    read may show the old count, but it cannot leave it in the cache for the next ones."""
    c, (ada, bob) = components, pair
    operators.change_fanout(c.fanout_settings, c.fanout, mode="write")
    liked = post(client, ada, "soon liked")
    c.feeds.push(Entry(liked, int(ada.id)), [int(bob.id)])
    c.redis.delete(post_key(liked))  # not cached: the read loads it from MongoDB
    hold = HoldAt("hydrate.loaded", "reader")
    seen: list[dict[int, int]] = []
    reader = threading.Thread(
        target=lambda: seen.append(home_like_counts(app.test_client(), bob)), name="reader"
    )
    with jitter.installed(hold):
        reader.start()
        assert hold.reached.wait(WAIT), "the read never loaded the post from MongoDB"
        fan = signup()
        assert client.put(f"/v1/posts/{liked}/like", headers=fan.headers).status_code == 204
        hold.release.set()
        reader.join(WAIT)
    assert seen == [{liked: 0}]  # the read began before the like
    assert home_like_counts(client, bob) == {liked: 1}  # loaded again, and cached
    assert home_like_counts(client, bob) == {liked: 1}


def test_a_delivery_that_publishes_after_the_delete_withdrew_takes_it_back(
    app, client, components, pair
):
    c, (ada, bob) = components, pair
    operators.change_fanout(c.fanout_settings, c.fanout, mode="write")
    gone = post(client, ada, "soon gone")
    author = int(ada.id)
    hold = HoldAt("delete_post.withdrawn", "deleter")
    deleted: list[int] = []
    deleter = threading.Thread(
        target=lambda: deleted.append(
            app.test_client().delete(f"/v1/posts/{gone}", headers=ada.headers).status_code
        ),
        name="deleter",
    )
    chunks = RecordingQueue()
    with jitter.installed(hold):
        deleter.start()
        assert hold.reached.wait(WAIT), "the delete never withdrew the post"
        # The delivery runs in the delete's window: the post is still in MongoDB.
        dataclasses.replace(c.fanout, queue=chunks).deliver_post(gone, author)
        hold.release.set()
        deleter.join(WAIT)
    assert deleted == [204]
    heard = c.redis.pubsub(ignore_subscribe_messages=True)
    heard.subscribe(reader_channel(int(bob.id)))
    c.streams.mark_open([int(bob.id)])  # bob has a stream open
    c.fanout.retract_post(gone, author)  # the delete's retraction runs...
    for args in chunks.sent:  # ...before the delivery's chunks do
        c.fanout.deliver_chunk(*args)
    assert chunks.sent, "the delivery sent no chunk"
    members = timeline_members(c.redis, home_key(int(bob.id)))
    assert f"{gone}:{author}" not in members
    assert Entry(gone, author) not in c.timelines.read_outboxes([author])[author].entries
    assert gone not in home_ids(client, bob)
    # bob's stream had the delete, and no update from the chunk that came after it
    c.redis.publish(reader_channel(int(bob.id)), '{"event": "barrier"}')
    events, deadline = [], time.monotonic() + WAIT
    while not events or events[-1]["event"] != "barrier":
        assert time.monotonic() < deadline, f"the barrier never came: {events}"
        message = heard.get_message(timeout=1.0)  # None for the subscription's own
        if message is not None:
            events.append(json.loads(message["data"]))
    heard.close()
    assert events == [{"event": "delete", "post_id": gone}, {"event": "barrier"}]


class RecordingQueue:
    """Chunk tasks a delivery sends, kept to be run when the test says."""

    def __init__(self) -> None:
        self.sent: list[tuple] = []

    def send(self, name, *args, **kwargs) -> None:
        assert name == fanout.DELIVER_CHUNK
        self.sent.append(args)

    def send_all(self, name, tasks, **kwargs) -> int:
        before = len(self.sent)
        for args in tasks:
            self.send(name, *args)
        return len(self.sent) - before
