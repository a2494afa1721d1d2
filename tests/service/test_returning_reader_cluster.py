"""A reader back after being away, on a Redis Cluster: there fan-out skips readers the
activity set says are idle, so their home may still exist but lack what was posted
meanwhile. Two reads at once must both find them away until the rebuild has begun: neither
may show the stale home."""

from __future__ import annotations

import pytest

from socialapp.domain.fanout import FanoutConfig, FanoutSettings
from socialapp.domain.timeline import Entry
from socialapp.services import accounts, posts
from socialapp.stores.timelines import TimelineStore
from tests.helpers_cluster_home import cluster_home


@pytest.mark.parametrize("mode", ["write", "hybrid"])  # the modes whose pages read a home
@pytest.mark.parametrize("beside", ["repair", "rebuild"])
def test_a_read_beside_a_returning_readers_first_never_shows_the_home_fan_out_skipped(
    components, redis_cluster_client, monkeypatch, beside, mode
):
    """``beside``: the second read runs when the first has found the reader away and is
    about to repair the home (``repair``), or has begun the rebuild (``rebuild``: its first
    write, the home emptied)."""
    policy = FanoutSettings(FanoutConfig(mode, 10_000))
    c = components
    built = cluster_home(c, redis_cluster_client)
    ada, reader = (
        accounts.register(c.users, c.passwords, c.ids, handle, "correct horse")["_id"]
        for handle in ("ada", "rdr")
    )
    assert c.follows.add(reader, ada)
    first = posts.create_post(c.uow, c.fanout, c.ids, ada, "before")["_id"]
    assert [p["_id"] for p in built.home.read_page(reader, policy, 20).posts] == [first]
    # The activity set says the reader is away while their home still exists (the cutoff
    # passed moments before the home's TTL, or a failover lost the set's recent writes).
    redis_cluster_client.zadd("fanout:active", {str(reader): 0})
    second = posts.create_post(c.uow, c.fanout, c.ids, ada, "meanwhile")["_id"]
    entry = Entry(second, ada)
    built.feeds.publish(entry)
    assert built.feeds.push(entry, [reader]) == 0  # skipped: the home lacks it

    seen = []
    hooked = {
        "repair": (type(built.feeds), "rebuild_home"),
        "rebuild": (TimelineStore, "begin_rebuild_home"),
    }
    owner, name = hooked[beside]
    original = getattr(owner, name)

    def read_beside(self, *args, **kwargs):
        if not seen:
            seen.append(None)
            seen.append([p["_id"] for p in built.home.read_page(reader, policy, 20).posts])
        return original(self, *args, **kwargs)

    monkeypatch.setattr(owner, name, read_beside)
    assert [p["_id"] for p in built.home.read_page(reader, policy, 20).posts] == [second, first]
    assert seen[1] == [second, first]
