"""A Redis Cluster that lost one master answers for some keys and not others: a request may
find one step done and the next refused. What is acknowledged must survive that.

The reliability run on a cluster found it: a DELETE took the post out of its author's
outbox (on a live master), then could not take it out of the public feed (on the lost
one) and answered 503, the post not deleted; the outbox, which is not rebuilt while it
exists, no longer had it, and the author's own home missed it for good.
"""

from __future__ import annotations

from socialapp.errors import Unavailable
from socialapp.stores.shared_feeds import SharedFeeds
from tests.helpers_timelines import timeline_entries


def test_a_delete_refused_half_way_leaves_the_post_where_it_was(
    client, components, signup, settle, monkeypatch
):
    c, ada, bob = components, signup(), signup()
    assert client.put(f"/v1/me/following/{ada.id}", headers=bob.headers).status_code == 204
    post = client.post("/v1/posts", json={"text": "kept"}, headers=ada.headers).json["id"]
    settle()

    def lost_master(self, keys, entry):
        raise Unavailable("Redis is unavailable: the shared feeds' master is lost")

    with monkeypatch.context() as patch:
        patch.setattr(SharedFeeds, "remove", lost_master)
        refused = client.delete(f"/v1/posts/{post}", headers=ada.headers)
    assert refused.status_code == 503, refused.json
    settle()

    assert client.get(f"/v1/posts/{post}").status_code == 200  # not deleted
    outbox = timeline_entries(c.redis, f"outbox:{{{ada.id}}}")[0]
    assert int(post) in {entry.post_id for entry in outbox}
    for reader in (ada, bob):
        home = client.get("/v1/timeline/home", headers=reader.headers).json["items"]
        assert post in [item["id"] for item in home]
