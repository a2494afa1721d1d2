"""An exclusive list's members leave its owner's home in every fan-out mode, pushed or pulled,
and the page the store of record serves (Redis down, the auditor's reference) alike, while
the list's own timeline shows them; making the list not exclusive, taking a member off or
deleting the list brings them back at the next page, old posts too, even where the home
was built while they were listed. The owner's own posts stay, listed or not (Mastodon's
rule)."""

from __future__ import annotations

import pytest

from socialapp.domain.fanout import MODES
from tests.service.test_timeline import home, post, switch


def ok(response, status: int = 200):
    assert response.status_code == status, (response.status_code, response.json)
    return response.json


def served(client, reader) -> list[str]:
    return [p["id"] for p in home(client, reader, limit=50).json["items"]]


def stored(components, reader) -> list[str]:
    return [str(p["_id"]) for p in components.home.read_page_from_store(int(reader.id), 50).posts]


def listed(client, reader, list_id: str) -> list[str]:
    path = f"/v1/me/lists/{list_id}/timeline"
    page = ok(client.get(path, query_string={"limit": 50}, headers=reader.headers))
    return [p["id"] for p in page["items"]]


@pytest.mark.parametrize("mode", MODES)
def test_an_exclusive_lists_members_leave_the_home_while_listed(
    client, signup, settle, components, mode
):
    """``star`` has two followers (pulled in hybrid and adaptive at threshold 2), ``ada`` one
    (pushed); ``rdr``'s home (and pulled set) is first built while both are listed: it
    holds them all the same, for when they leave the list."""
    switch(components, mode)
    settle()
    rdr, star, ada, fan = signup("rdr"), signup("star"), signup("ada"), signup("fan")
    for reader, followee in ((rdr, star), (rdr, ada), (fan, star)):
        followed = client.put(f"/v1/me/following/{followee.id}", headers=reader.headers)
        assert followed.status_code == 204
    quiet = {"title": "quiet", "exclusive": True}
    made = ok(client.post("/v1/me/lists", json=quiet, headers=rdr.headers), 201)
    path = f"/v1/me/lists/{made['id']}"
    for member in (star, ada, rdr):  # the owner too: their own posts stay in their home
        assert client.put(f"{path}/members/{member.id}", headers=rdr.headers).status_code == 204
    by_star, by_ada, own = (
        post(client, star, "star"),
        post(client, ada, "ada"),
        post(client, rdr, "me"),
    )
    by_fan = post(client, fan, "fan")
    boost = ok(client.put(f"/v1/posts/{by_fan}/boost", headers=ada.headers))["id"]
    settle()  # rdr has not read yet: nothing was pushed to them, their first page builds

    everyone = sorted([by_star, by_ada, own, boost], key=int, reverse=True)
    assert served(client, rdr) == stored(components, rdr) == [own]
    assert listed(client, rdr, made["id"]) == everyone  # the list shows them

    ok(client.patch(path, json={"exclusive": False}, headers=rdr.headers))
    assert served(client, rdr) == stored(components, rdr) == everyone
    ok(client.patch(path, json={"exclusive": True}, headers=rdr.headers))
    assert served(client, rdr) == stored(components, rdr) == [own]
    # following again (a retry, or reblogs changed) keeps a listed account out
    assert client.put(f"/v1/me/following/{star.id}", headers=rdr.headers).status_code == 204
    assert served(client, rdr) == [own]

    assert client.delete(f"{path}/members/{ada.id}", headers=rdr.headers).status_code == 204
    with_ada = sorted([by_ada, own, boost], key=int, reverse=True)
    assert served(client, rdr) == stored(components, rdr) == with_ada
    assert client.delete(path, headers=rdr.headers).status_code == 204
    assert served(client, rdr) == stored(components, rdr) == everyone
