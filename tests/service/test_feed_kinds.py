"""GET /v1/admin/fanout's feed kinds: lists, their memberships, tag follows and the shared
feeds counted; with ?memory=true, home timelines' Redis memory measured; with
?forecast=true, what the forecast says of lists and followed tags."""

import pytest

from socialapp.services import forecast
from socialapp.stores.timelines import home_key, pending_key
from tests.conftest import with_operator


@pytest.fixture
def settings(settings):
    return with_operator(settings)


def test_the_fanout_reports_the_feed_kinds_and_their_forecast(
    client, signup, operator_headers, components
):
    ada, bob, star = (signup(h) for h in ("ada", "bob", "star"))
    empty = client.get("/v1/admin/fanout?memory=true", headers=operator_headers)
    nothing = empty.json["timelines"]
    assert nothing["entries_sampled"] == 0 and nothing["bytes_per_entry"] is None
    for fan in (ada, bob):
        assert client.put(f"/v1/me/following/{star.id}", headers=fan.headers).status_code == 204
    assert client.put(f"/v1/me/following/{bob.id}", headers=ada.headers).status_code == 204
    lists = {}
    for owner, title in ((ada, "stars"), (ada, "friends"), (bob, "stars")):
        made = client.post("/v1/me/lists", json={"title": title}, headers=owner.headers)
        assert made.status_code == 201, made.json
        lists[owner.id, title] = made.json["id"]
    for (owner, title), member in (((ada, "stars"), star), ((ada, "friends"), bob)):
        path = f"/v1/me/lists/{lists[owner.id, title]}/members/{member.id}"
        assert client.put(path, headers=owner.headers).status_code == 204
    path = f"/v1/me/lists/{lists[bob.id, 'stars']}/members/{star.id}"
    assert client.put(path, headers=bob.headers).status_code == 204
    for name in ("cats", "dogs"):
        assert client.put(f"/v1/me/tags/{name}", headers=ada.headers).status_code == 204
    for text in ("#cats one", "two", "#cats #dogs three"):
        assert (
            client.post("/v1/posts", json={"text": text}, headers=star.headers).status_code == 201
        )
    # The shared feeds are made by their first reader, from MongoDB (no worker delivers here).
    for path in ("/v1/timelines/public", "/v1/tags/cats/timeline", "/v1/tags/dogs/timeline"):
        assert client.get(path, headers=bob.headers).status_code == 200
    assert client.get("/v1/timeline/home", headers=ada.headers).status_code == 200  # ada reads

    plain = client.get("/v1/admin/fanout", headers=operator_headers)
    assert plain.status_code == 200, plain.json
    feeds = plain.json["feeds"]
    assert feeds == {
        "lists": 3,
        "list_memberships": 3,
        "tag_follows": 2,
        "public_entries": 3,
        "tag_feeds": 2,
        "tag_feeds_exact": True,
    }  # no forecast unless asked: this answer is polled
    assert plain.json["mode"] == "hybrid"  # the settings are answered as before
    assert "timelines" not in plain.json  # nor the homes measured: a MEMORY USAGE each
    # Home timelines measured: ada's, the one home read (star's 3 posts), by MEMORY USAGE
    # of the home and its pending list.
    memory = sum(map(components.redis.memory_usage, (home_key(ada.id), pending_key(ada.id))))
    measured = client.get("/v1/admin/fanout?memory=true", headers=operator_headers)
    assert measured.json["timelines"] == {
        "active_readers": 1,
        "homes_sampled": 1,
        "entries_sampled": 3,
        "memory_bytes_sampled": memory,
        "bytes_per_entry": round(memory / 3, 1),
    }

    asked = client.get("/v1/admin/fanout?forecast=true", headers=operator_headers).json
    said = asked["feeds"]["forecast"]
    assert said["threshold"] == asked["celebrity_threshold"] == 10_000  # star is pushed
    assert said["list_memberships"] == 3 and said["list_memberships_pulled"] == 0
    assert said["list_authors_counted"] == 2  # star and bob: every author, few as they are
    # star's 3 posts reach the 2 lists holding them at the share of readers active, as homes
    # do: 1/4 (ada, of 4 accounts with the operator's).
    assert said["list_timeline_entries"] == 1  # 3 posts x 2 lists x 1/4, rounded down
    assert said["list_deliveries_per_second"] == pytest.approx(3 * 2 / 4 / 3600, abs=1e-4)
    assert said["readers_sampled_for_tags"] == 1 and said["readers_with_followed_tags"] == 1
    # ada's cats and dogs have one follower each, under the threshold: pushed to her tagged
    # set at her share of 1/4 (3 uses in the trends), and her home reads read neither feed.
    assert (said["tags_counted"], said["tags_pushed"], said["tags_pulled"]) == (2, 2, 0)
    assert said["tag_deliveries_per_second"] == pytest.approx(
        3 / said["tag_window_hours"] / 4 / 3600, abs=1e-6
    )
    assert said["tag_feeds_per_read"] == {"p50": 0, "p99": 0, "max": 0}
    read_mode = client.get("/v1/admin/fanout/forecast?threshold=1", headers=operator_headers).json
    assert read_mode["tag_feeds_per_read"] == {"p50": 2, "p99": 2, "max": 2}
    assert read_mode["tag_deliveries_per_second"] == 0 and read_mode["tags_pulled"] == 2

    pulled = client.get("/v1/admin/fanout/forecast?threshold=2", headers=operator_headers).json
    assert pulled["list_memberships_pulled"] == 2 and pulled["list_timeline_entries"] == 0
    assert pulled["authors_pulled"] == 1  # the home figures are there, as before
    for bad in ("forecast=yes", "forecast=1", "memory=1", "memory=on", "other=true"):
        refused = client.get(f"/v1/admin/fanout?{bad}", headers=operator_headers)
        assert refused.status_code == 422, bad


def test_list_memberships_past_the_sample_are_estimated_from_followers():
    """Over the sample, the largest half is counted and a random half of the others; the
    rest are estimated at the memberships per follower of that random half."""
    authors = [forecast.model.Author(id=i, followers=i) for i in range(1, 11)]
    counted = {i: 2 * i for i in range(1, 11)}  # two lists per follower

    class Lists:
        def memberships(self, ids):
            return {i: counted[i] for i in ids}

    found, per_follower = forecast._list_memberships(Lists(), authors, sample=4)
    assert len(found) == 4 and {10, 9} <= set(found)
    assert per_follower == 2.0
    assert forecast._list_memberships(Lists(), authors, sample=10) == (counted, 0.0)
