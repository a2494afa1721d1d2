"""The consistency auditor on the real stack: first pages as served against MongoDB.

Rounds are run by calling the service, with a clock a grace period ahead (so the posts just
made count as settled) and a queue that records the second looks it asks for; the test then
takes the second look itself. One test runs the whole path on the real Celery worker.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time

import pytest

from socialapp.config import ConfigError, Settings
from socialapp.domain.fanout import MODES
from socialapp.domain.ids import id_time_ms
from socialapp.domain.timeline import Entry
from socialapp.queue import FEED
from socialapp.services import audit, operators
from socialapp.stores.audit import ROUND_LOCK
from socialapp.stores.post_cache import post_key
from socialapp.stores.timelines import home_key
from tests.conftest import with_operator
from tests.helpers_timelines import drop_entry, put_entry
from tests.waiting import wait_for

GRACE = 1.0


@pytest.fixture
def settings(settings):
    return dataclasses.replace(
        with_operator(settings),
        audit_interval_seconds=60,  # on (the other tests' settings turn it off)
        audit_sample=50,  # every active reader
        audit_grace_seconds=GRACE,
        sweep_interval_seconds=3600,  # the worker's own rounds would race the test's
    )


class SentTasks:
    """Stands in for the task queue: records what a round sends."""

    def __init__(self) -> None:
        self.sent: list[tuple] = []

    def send(self, name, *args, queue=None, countdown=None) -> None:
        self.sent.append((name, args, queue, countdown))


def audit_round(c, queue, clock) -> int:
    return dataclasses.replace(c.auditor, queue=queue).audit_round(clock)


def recheck(c, reader, suspected, clock):
    return c.auditor.recheck(reader, suspected, clock)


def ahead(seconds: float):
    """A clock ``seconds`` ahead: with a grace period's worth, the posts made so far count as
    settled at a first look; with two, it is the second look's."""
    return lambda: time.time() + seconds


def home(client, account):
    response = client.get("/v1/timeline/home", headers=account.headers)
    assert response.status_code == 200, response.json
    return [p["id"] for p in response.json["items"]]


def post(client, account, text: str) -> int:
    response = client.post("/v1/posts", json={"text": text}, headers=account.headers)
    assert response.status_code == 201, response.json
    return int(response.json["id"])


def follow(client, reader, author) -> None:
    response = client.put(f"/v1/me/following/{author.id}", headers=reader.headers)
    assert response.status_code == 204


def consistency(client, operator_headers) -> dict:
    response = client.get("/v1/admin/consistency", headers=operator_headers)
    assert response.status_code == 200, response.json
    return response.json


@pytest.mark.parametrize("mode", MODES)
def test_a_healthy_feed_audits_clean_in_every_mode(client, signup, settle, components, mode):
    c = components
    # threshold 2: in hybrid and adaptive, authors with 2+ followers are pulled
    operators.change_fanout(c.fanout_settings, c.fanout, mode=mode, celebrity_threshold=2)
    settle()
    ada, bob, cyd, dan = (signup() for _ in range(4))
    for reader in (bob, cyd, dan):
        home(client, reader)  # active: fan-out delivers to them
        follow(client, reader, ada)
    follow(client, cyd, bob)
    follow(client, dan, bob)
    posted = [post(client, author, "hi") for author in (ada, bob, ada, bob, ada)]
    assert client.delete(f"/v1/posts/{posted[2]}", headers=ada.headers).status_code == 204
    assert client.delete(f"/v1/me/following/{bob.id}", headers=dan.headers).status_code == 204
    settle()
    readers = [int(r.id) for r in (bob, cyd, dan)]
    window, now = c.settings.adaptive_rate_window_seconds, time.time()
    reads_before = c.rate_meters.meters(readers, "reads", window, now)
    queue = SentTasks()
    assert audit_round(c, queue, ahead(GRACE + 1)) == 3
    assert queue.sent == []  # nothing suspected, nothing to look at again
    totals = c.audits.totals()
    assert totals.pages == 3 and not any(totals.mismatches.values())
    # the audit's reads do not count as the readers' own in adaptive mode's meters
    assert c.rate_meters.meters(readers, "reads", window, now) == reads_before


def test_a_corrupted_timeline_is_caught_on_the_second_look(
    client, signup, settle, components, operator_headers
):
    c = components
    operators.change_fanout(c.fanout_settings, c.fanout, mode="write")
    settle()
    ada, bob, dan = signup(), signup(), signup()
    home(client, bob)
    follow(client, bob, ada)
    kept, lost, deleted = (post(client, ada, text) for text in ("kept", "lost", "deleted"))
    unfollowed = post(client, dan, "never followed")
    document = c.posts.get(deleted)
    assert client.delete(f"/v1/posts/{deleted}", headers=ada.headers).status_code == 204
    settle()
    assert home(client, bob) == [str(lost), str(kept)]
    reader, home_of_bob = int(bob.id), home_key(int(bob.id))
    # missing: a delivered entry is lost from the home
    assert drop_entry(c.redis, home_of_bob, Entry(lost, int(ada.id))) == 1
    # extra: a post of an author bob does not follow, and a stale copy of his followees
    put_entry(c.redis, home_of_bob, Entry(unfollowed, int(dan.id)))
    c.followee_copies.add_followee(reader, int(dan.id))
    # deleted: a deleted post left behind in the home and in the post cache
    put_entry(c.redis, home_of_bob, Entry(deleted, int(ada.id)))
    c.redis.delete(post_key(deleted))  # its tombstone, gone
    c.post_cache.put_many({deleted: document}, c.post_cache.clock())
    assert home(client, bob) == [str(unfollowed), str(deleted), str(kept)]

    queue = SentTasks()
    assert audit_round(c, queue, ahead(GRACE + 1)) == 1
    expected = {"missing": [lost], "extra": [unfollowed], "deleted": [deleted]}
    assert queue.sent == [(audit.RECHECK, (reader, expected), FEED, GRACE)]
    assert not any(c.audits.totals().mismatches.values())  # a suspicion counts for nothing

    assert recheck(c, reader, expected, ahead(2 * GRACE + 1)) == expected
    totals = c.audits.totals()
    assert totals.pages == 1
    assert totals.mismatches == {"missing": 1, "extra": 1, "deleted": 1, "order": 0}
    shown = consistency(client, operator_headers)
    assert shown["pages_audited"] == 1 and shown["mismatches"] == totals.mismatches
    assert (shown["interval_seconds"], shown["sample"], shown["grace_seconds"]) == (60, 50, GRACE)
    assert shown["last_round_at"] is not None
    evidence = {e["kind"]: e for e in shown["recent"]}
    assert evidence["missing"]["post_ids"] == [str(lost)]
    assert evidence["extra"]["post_ids"] == [str(unfollowed)]
    assert evidence["deleted"]["post_ids"] == [str(deleted)]
    assert {(e["reader"], e["mode"]) for e in shown["recent"]} == {(bob.id, "write")}
    metrics = client.get("/metrics").get_data(as_text=True)
    assert "socialapp_audit_pages_total 1.0" in metrics
    for kind in ("missing", "extra", "deleted"):
        assert f'socialapp_audit_mismatches_total{{kind="{kind}"}} 1.0' in metrics


def test_a_fault_gone_by_the_second_look_is_not_counted(client, signup, settle, components):
    c = components
    ada, bob = signup(), signup()
    home(client, bob)
    follow(client, bob, ada)
    first = post(client, ada, "first")
    settle()
    reader = int(bob.id)
    drop_entry(
        c.redis, home_key(reader), Entry(first, int(ada.id))
    )  # as if its delivery were still due
    queue = SentTasks()
    assert audit_round(c, queue, ahead(GRACE + 1)) == 1
    assert queue.sent[0][1] == (reader, {"missing": [first]})
    c.timelines.add_to_homes([reader], Entry(first, int(ada.id)))  # the delivery lands
    assert recheck(c, reader, {"missing": [first]}, ahead(2 * GRACE + 1)) == {}
    assert not any(c.audits.totals().mismatches.values())


def test_a_reader_is_audited_again_only_after_reading_again(client, signup, components):
    c = components
    bob, cyd = signup(), signup()
    home(client, bob)
    home(client, cyd)
    assert audit_round(c, SentTasks(), time.time) == 2
    c.redis.delete(ROUND_LOCK)  # the interval has passed
    assert audit_round(c, SentTasks(), time.time) == 0  # their last activity is the audit's
    home(client, cyd)
    c.redis.delete(ROUND_LOCK)
    assert audit_round(c, SentTasks(), time.time) == 1
    assert c.audits.totals().pages == 3


def test_one_round_per_interval_and_none_while_off(client, signup, components):
    c = components
    home(client, signup())
    assert audit_round(c, SentTasks(), time.time) == 1
    assert audit_round(c, SentTasks(), time.time) == 0  # within the interval
    c.redis.delete(ROUND_LOCK)
    off = dataclasses.replace(c.settings, audit_interval_seconds=0)
    off = dataclasses.replace(c, auditor=dataclasses.replace(c.auditor, config=off))
    assert audit_round(off, SentTasks(), time.time) == 0
    assert c.redis.exists(ROUND_LOCK) == 0


def test_the_worker_confirms_a_fault_after_the_grace_period(
    client, signup, settle, components, operator_headers
):
    c = components
    ada, bob = signup(), signup()
    home(client, bob)
    follow(client, bob, ada)
    lost = post(client, ada, "lost")
    post(client, ada, "kept")
    settle()
    assert drop_entry(c.redis, home_key(int(bob.id)), Entry(lost, int(ada.id))) == 1
    # only lets time pass: the round looks at posts older than the grace period
    time.sleep(max(0.0, id_time_ms(lost) / 1000 + GRACE + 0.1 - time.time()))
    c.queue.send(audit.AUDIT, queue=FEED)
    wait_for(
        lambda: c.audits.totals().mismatches["missing"],
        "the worker's round and its second look to confirm the missing post",
    )
    shown = consistency(client, operator_headers)
    assert shown["pages_audited"] == 1 and shown["mismatches"]["missing"] == 1
    assert [(e["kind"], e["post_ids"]) for e in shown["recent"]] == [("missing", [str(lost)])]
    looks = [
        dt.datetime.fromisoformat(t) for t in (shown["last_round_at"], shown["recent"][0]["at"])
    ]
    assert looks[1] - looks[0] >= dt.timedelta(seconds=GRACE)  # the second look came after it


def test_only_operators_see_the_consistency_figures(client, signup, operator_headers):
    bob = signup()
    assert client.get("/v1/admin/consistency").status_code == 401
    forbidden = client.get("/v1/admin/consistency", headers=bob.headers)
    assert forbidden.status_code == 403 and forbidden.json["code"] == 403
    shown = consistency(client, operator_headers)
    assert shown["pages_audited"] == 0 and shown["recent"] == []
    assert shown["last_round_at"] is None
    documented = client.get("/openapi.json").json["paths"]["/v1/admin/consistency"]["get"]
    assert documented["security"] == [{"bearerAuth": []}]
    assert {"200", "401", "403"} <= set(documented["responses"])


@pytest.mark.parametrize(
    "query", ["limit=1", "reset=1", "kind=missing&kind=extra", "x=%00", "a" * 3000 + "=1"]
)
def test_the_consistency_figures_refuse_a_query_string_and_change_nothing(
    client, operator_headers, components, query
):
    """The endpoint takes no parameters: whatever an attacker appends is a clear 422, and
    neither the totals nor the evidence move."""
    before = client.get("/v1/admin/consistency", headers=operator_headers).json
    refused = client.get(f"/v1/admin/consistency?{query}", headers=operator_headers)
    assert refused.status_code == 422 and refused.is_json, refused.data[:200]
    assert client.get("/v1/admin/consistency", headers=operator_headers).json == before


@pytest.mark.parametrize(
    "env",
    [
        {"SOCIALAPP_AUDIT_SAMPLE": "-1"},
        {"SOCIALAPP_AUDIT_GRACE_SECONDS": "-5"},
        {"SOCIALAPP_AUDIT_INTERVAL_SECONDS": "nan"},
        {"SOCIALAPP_AUDIT_INTERVAL_SECONDS": "inf"},
    ],
)
def test_the_auditor_settings_refuse_what_no_round_could_use(env):
    with pytest.raises(ConfigError, match=next(iter(env))):
        Settings.from_env(env)
