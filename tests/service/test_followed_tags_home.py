"""A followed hashtag's public posts enter the follower's home in every fan-out mode, pulled at
read time: followed or not, their authors are shown unless hidden from the reader; an
unfollowed tag takes them out at once; a post that is both followed and tagged shows once;
the store of record's page (Redis down, the auditor's reference) is the same page."""

import dataclasses

import pytest

from socialapp.domain.fanout import MODES
from socialapp.services import operators
from tests.service.test_timeline import all_pages, home, post


def follow_tag(client, account, name, method="put"):
    response = getattr(client, method)(f"/v1/me/tags/{name}", headers=account.headers)
    assert response.status_code == 204, response.json


def ids(client, account) -> list[int]:
    return [int(p["id"]) for p in home(client, account).json["items"]]


def posted(client, account, text) -> int:
    return int(post(client, account, text))


@pytest.mark.parametrize("mode", MODES)
def test_a_followed_tags_posts_enter_and_leave_the_home(client, signup, settle, components, mode):
    operators.change_fanout(
        components.fanout_settings, components.fanout, mode=mode, celebrity_threshold=2
    )
    settle()
    ada, bob, eve, reader = signup("ada"), signup("bob"), signup("eve"), signup("rdr")
    home(client, reader)
    client.put(f"/v1/me/following/{bob.id}", headers=reader.headers)
    follow_tag(client, reader, "Cats")
    stranger = posted(client, ada, "look #cats")  # not followed: the tag brings it
    followed = posted(client, bob, "mine too #CATS")  # followed and tagged: once
    other = posted(client, ada, "#dogs only")
    unlisted = client.post(
        "/api/v1/statuses",
        data={"status": "quiet #cats", "visibility": "unlisted"},
        headers=ada.headers,
    ).json["id"]
    muted = posted(client, eve, "#cats by someone muted")
    client.post(f"/api/v1/accounts/{eve.id}/mute", headers=reader.headers)
    settle()

    assert ids(client, reader) == [followed, stranger]
    assert int(unlisted) not in ids(client, reader) and other not in ids(client, reader)
    assert muted not in ids(client, reader)

    follow_tag(client, reader, "cats", method="delete")
    assert ids(client, reader) == [followed]


@pytest.fixture
def settings(settings):
    return dataclasses.replace(settings, tag_feed_cap=3)  # pages go past it into MongoDB


def test_the_store_page_is_the_served_page_and_pages_go_past_the_feed(
    client, signup, settle, components
):
    c = components
    ada, reader = signup("ada"), signup("rdr")
    home(client, reader)
    follow_tag(client, reader, "cats")
    made = [posted(client, ada, f"#cats {n}") for n in range(7)]
    settle()
    c.redis.delete("tag:{cats}")  # lost: rebuilt from MongoDB by the next page
    served = c.home.read_page(int(reader.id), c.fanout_settings.current(), 20)
    stored = c.home.read_page_from_store(int(reader.id), 20)
    assert [p["_id"] for p in served.posts] == [p["_id"] for p in stored.posts] == made[::-1]
    assert [int(i) for i in all_pages(client, reader, limit=3)] == made[::-1]  # no repeat, gap
