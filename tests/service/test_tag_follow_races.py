"""A tag follow racing a page read, the interleaving forced at its pause point
(``socialapp.jitter``): a page read while the follow is under way shows the tag's posts
whole or not at all, never its newer posts without its older ones. And what the
consistency auditor must not count: a follow landing in the middle of its look, a tagged
post whose delivery is still queued."""

from __future__ import annotations

import threading
import time

from loadtest.processes import wait_until
from socialapp import jitter
from socialapp.services import operators
from tests.service.test_delete_races import WAIT, HoldAt
from tests.service.test_followed_tags_home import follow_tag, ids, posted
from tests.service.test_timeline import home


def test_a_page_read_before_the_followers_backfill_still_shows_the_tags_posts(
    app, client, signup, settle, components
):
    """Write mode pushes the tag. Following it backfills the follower's tagged set from its
    feed; a page read before that backfill lands (the follow held just after the feed read)
    must not find the tag settled as pushed with the set still lacking its older post: the
    tag is read from its feed until the backfill is done."""
    c = components
    operators.change_fanout(c.fanout_settings, c.fanout, mode="write")
    settle()
    ada, reader = signup("ada"), signup("rdr")
    follow_tag(client, reader, "dogs")  # the reader's tagged set exists: the follow merges into it
    home(client, reader)
    older = posted(client, ada, "early #cats")
    settle()
    hold = HoldAt("merge_tag.feed_read", "follower")
    follower = threading.Thread(
        target=lambda: follow_tag(app.test_client(), reader, "cats"), name="follower"
    )
    with jitter.installed(hold):
        follower.start()
        assert hold.reached.wait(WAIT), "the follow never read the tag's feed"
        newer = posted(client, ada, "later #cats")
        delivered = lambda: "fanout_pending" not in c.posts.get(newer)  # noqa: E731
        wait_until(delivered, "the newer post's delivery", WAIT)  # before the backfill
        during = ids(client, reader)
        hold.release.set()
        follower.join(WAIT)
    assert not follower.is_alive()
    assert during == [newer, older]
    settle()
    assert ids(client, reader) == [newer, older]


def test_a_follow_landing_while_the_auditor_reads_the_served_page_is_no_fault(
    client, signup, settle, components, monkeypatch
):
    """The auditor reads the served page, then the store's: a tag followed in between (a
    look takes seconds on a loaded machine) makes the store expect the tag's older posts,
    which the page read before the follow rightly lacks. Two looks straddling two follows
    would confirm it; no look counts it."""
    c = components
    operators.change_fanout(c.fanout_settings, c.fanout, mode="write")
    settle()
    ada, reader = signup("ada"), signup("rdr")
    home(client, reader)
    older = posted(client, ada, "early #cats")
    settle()
    served_page = c.auditor.home.read_page

    def served_then_followed(*args, **kwargs):
        page = served_page(*args, **kwargs)
        follow_tag(client, reader, "cats")  # lands between the served page and the store's
        return page

    monkeypatch.setattr(c.auditor.home, "read_page", served_then_followed)
    _, found = c.auditor.look(int(reader.id), time.time() + 60)
    monkeypatch.undo()
    assert found == {}
    assert ids(client, reader) == [older]  # the follow took: the tag's post shows


def test_a_post_whose_fanout_has_not_finished_is_late_not_missing(client, signup, components):
    """No worker runs here: the tagged post's delivery waits in the queue, as it does behind a
    backlog on a loaded machine, past the grace period. Its fan-out is still pending, so the
    page that lacks it is not at fault; once its chunks have run without reaching the
    page (a lost write), it is counted."""
    c = components
    operators.change_fanout(c.fanout_settings, c.fanout, mode="write")
    ada, reader = signup("ada"), signup("rdr")
    follow_tag(client, reader, "cats")
    home(client, reader)
    late = posted(client, ada, "queued #cats")
    assert c.posts.get(late)["fanout_pending"]
    later = time.time() + 60  # every post past the grace period
    assert c.auditor.look(int(reader.id), later)[1] == {}
    c.posts.finish_fanout(late)  # its chunks ran, yet the tagged set never got it
    assert c.auditor.look(int(reader.id), later)[1] == {"missing": [late]}
