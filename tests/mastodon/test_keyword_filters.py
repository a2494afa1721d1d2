"""Keyword filters (filters v2) as Mastodon 4.3 serves them: the CRUD of filters, keywords
and statuses (with a real client library too), another account's never reachable, and
what they do to the statuses a reader is shown outside the home (its pages in every mode:
tests/service/test_keyword_filters.py)."""

from __future__ import annotations

import pytest
from mastodon.errors import MastodonNotFoundError
from werkzeug.datastructures import MultiDict

from tests.browser_fixtures import served_in_thread
from tests.mastodon.conftest import MastodonUser, signed_in
from tests.mastodon.test_marks import ok, refused, status


def create(client, user, **fields):
    return client.post("/api/v2/filters", json=fields, headers=user.headers)


def a_filter(client, user, keywords=("spoiler",), action="warn", context=("home",), **more):
    fields = {"title": "t", "context": list(context), "filter_action": action, **more}
    fields["keywords_attributes"] = [{"keyword": k, "whole_word": False} for k in keywords]
    return ok(create(client, user, **fields))


def test_form_fields_create_keywords_as_rails_reads_them_and_update_changes_and_destroys(
    client, masto
):
    me = masto()
    form = [
        ("title", "Birdsite"),
        ("context[]", "home"),
        ("context[]", "public"),
        ("filter_action", "hide"),
        ("keywords_attributes[][keyword]", "from birdsite"),
        ("keywords_attributes[][whole_word]", "true"),
        ("keywords_attributes[][keyword]", "@twitter.com"),
        ("keywords_attributes[][whole_word]", "false"),
    ]
    made = ok(client.post("/api/v2/filters", data=MultiDict(form), headers=me.headers))
    assert made["title"] == "Birdsite" and made["context"] == ["home", "public"]
    assert made["filter_action"] == "hide" and made["expires_at"] is None
    assert [(k["keyword"], k["whole_word"]) for k in made["keywords"]] == [
        ("from birdsite", True),
        ("@twitter.com", False),
    ]
    first, second = (k["id"] for k in made["keywords"])
    update = [
        ("keywords_attributes[0][id]", first),
        ("keywords_attributes[0][_destroy]", "true"),
        ("keywords_attributes[1][id]", second),
        ("keywords_attributes[1][keyword]", "baz"),
        ("keywords_attributes[2][keyword]", "new"),
        ("expires_in", "3600"),
    ]
    path = f"/api/v2/filters/{made['id']}"
    changed = ok(client.put(path, data=MultiDict(update), headers=me.headers))
    assert [(k["id"], k["keyword"]) for k in changed["keywords"][:1]] == [(second, "baz")]
    assert [k["keyword"] for k in changed["keywords"]] == ["baz", "new"]
    assert changed["expires_at"] is not None and changed["title"] == "Birdsite"
    assert ok(client.get("/api/v2/filters", headers=me.headers)) == [changed]
    v1 = ok(client.get("/api/v1/filters", headers=me.headers))
    assert [(f["phrase"], f["irreversible"], f["context"]) for f in v1] == [
        ("baz", True, ["home", "public"]),
        ("new", True, ["home", "public"]),
    ]


def test_filters_v1_are_the_v2_filters_keywords(client, masto):
    """As on Mastodon 4: a v1 filter is one keyword (its id the keyword's) of a v2 filter,
    whose context, action (``irreversible``: hide) and expiry it shows and changes; the
    filter's fields are not changed from v1 while it holds other keywords; deleting removes
    the keyword, not the filter."""
    me, author = masto(), masto()
    form = [("phrase", "Spoiler"), ("context[]", "home"), ("context[]", "thread"),
            ("irreversible", "true"), ("whole_word", "false"), ("expires_in", "3600")]  # fmt: skip
    made = ok(client.post("/api/v1/filters", data=MultiDict(form), headers=me.headers))
    assert made["phrase"] == "Spoiler" and made["context"] == ["home", "thread"]
    assert made["irreversible"] is True and made["whole_word"] is False and made["expires_at"]
    [v2] = ok(client.get("/api/v2/filters", headers=me.headers))
    assert (v2["title"], v2["filter_action"], v2["expires_at"]) == (
        "Spoiler", "hide", made["expires_at"]
    )  # fmt: skip
    assert [k["id"] for k in v2["keywords"]] == [made["id"]]
    path = f"/api/v1/filters/{made['id']}"
    assert ok(client.get(path, headers=me.headers)) == made
    assert ok(client.get("/api/v1/filters", headers=me.headers)) == [made]
    post = status(client, author, "a spoilers thread")
    [result] = ok(client.get(f"/api/v1/statuses/{post}", headers=me.headers))["filtered"]
    assert result["filter"]["id"] == v2["id"] and result["keyword_matches"] == ["spoiler"]

    changed = ok(client.put(path, json={"phrase": "ending", "context": ["public"],
                                         "irreversible": False, "expires_in": None},
                            headers=me.headers))  # fmt: skip
    assert (changed["id"], changed["phrase"], changed["context"]) == (made["id"], "ending",
                                                                       ["public"])  # fmt: skip
    assert changed["irreversible"] is False and changed["expires_at"] is None
    assert changed["whole_word"] is False  # left as it was
    ok(client.post(f"/api/v2/filters/{v2['id']}/keywords", data={"keyword": "finale"},
                   headers=me.headers))  # fmt: skip
    two = ok(client.get("/api/v1/filters", headers=me.headers))
    assert [(f["phrase"], f["context"]) for f in two] == [("ending", ["public"]),
                                                         ("finale", ["public"])]  # fmt: skip
    before = ok(client.get("/api/v2/filters", headers=me.headers))
    for shared in ({"context": ["home"]}, {"irreversible": True, "phrase": "x"},
                   {"expires_in": 60}):  # fmt: skip
        error = refused(client.put(path, json=shared, headers=me.headers), 422)
        assert "more than one filter keyword" in error
    assert ok(client.get("/api/v2/filters", headers=me.headers)) == before
    same = ok(client.put(path, json={"phrase": "end", "context": ["public"]}, headers=me.headers))
    assert same["phrase"] == "end"  # the keyword alone, and the context it has: allowed
    assert ok(client.delete(path, headers=me.headers)) == {}
    refused(client.get(path, headers=me.headers), 404)
    [left] = ok(client.get("/api/v2/filters", headers=me.headers))
    assert left["id"] == v2["id"] and [k["keyword"] for k in left["keywords"]] == ["finale"]
    refused(client.post("/api/v1/filters", data={"context[]": "home"}, headers=me.headers), 422)


def test_another_accounts_filter_keyword_and_status_are_404_and_unchanged(client, masto):
    me, other = masto(), masto()
    post = status(client, other)
    theirs = a_filter(client, other)
    keyword = theirs["keywords"][0]["id"]
    filtered = ok(
        client.post(
            f"/api/v2/filters/{theirs['id']}/statuses",
            data={"status_id": post},
            headers=other.headers,
        )
    )
    paths = [
        ("get", f"/api/v2/filters/{theirs['id']}"),
        ("put", f"/api/v2/filters/{theirs['id']}"),
        ("delete", f"/api/v2/filters/{theirs['id']}"),
        ("get", f"/api/v2/filters/{theirs['id']}/keywords"),
        ("post", f"/api/v2/filters/{theirs['id']}/keywords"),
        ("get", f"/api/v2/filters/{theirs['id']}/statuses"),
        ("post", f"/api/v2/filters/{theirs['id']}/statuses"),
        ("get", f"/api/v2/filters/keywords/{keyword}"),
        ("put", f"/api/v2/filters/keywords/{keyword}"),
        ("delete", f"/api/v2/filters/keywords/{keyword}"),
        ("get", f"/api/v2/filters/statuses/{filtered['id']}"),
        ("delete", f"/api/v2/filters/statuses/{filtered['id']}"),
        ("get", "/api/v2/filters/not-a-number"),
    ]
    body = {"keyword": "x", "status_id": post, "title": "mine now"}
    for method, path in paths:
        response = getattr(client, method)(path, data=body, headers=me.headers)
        assert refused(response, 404) == "Record not found", (method, path)
    own = ok(client.get("/api/v2/filters", headers=other.headers))
    assert own == [{**theirs, "statuses": [filtered]}]
    assert ok(client.get("/api/v2/filters", headers=me.headers)) == []


def test_filtered_carries_every_active_match_and_a_hide_leaves_a_thread_and_account(client, masto):
    """``filtered`` lists each active filter that matches, in any context, as Mastodon's
    does (the client applies those of its context); a hide in ``thread`` or ``account``
    leaves the status out there, and an expired filter does nothing."""
    me, author = masto(), masto()
    post = status(client, author, "a Spoiler about the movie")
    plain = status(client, author, "nothing to see")
    comment = ok(
        client.post(
            "/api/v1/statuses",
            data={"status": "the ending spoiler", "in_reply_to_id": plain},
            headers=author.headers,
        )
    )["id"]
    warn = a_filter(client, me, ["spoiler"], context=["public"])
    a_filter(client, me, ["movie"], action="hide", context=["thread", "account"])
    a_filter(client, me, ["spoiler"], action="hide", context=["thread"])
    shown = ok(client.get(f"/api/v1/statuses/{post}", headers=me.headers))
    assert len(shown["filtered"]) == 3
    result = shown["filtered"][0]
    assert result["filter"] == {k: warn[k] for k in result["filter"]}
    assert set(result["filter"]) == {"id", "title", "context", "expires_at", "filter_action"}
    assert result["keyword_matches"] == ["Spoiler"] and result["status_matches"] is None
    assert ok(client.get(f"/api/v1/statuses/{post}"))["filtered"] == []  # anonymous
    page = ok(client.get(f"/api/v1/accounts/{author.id}/statuses", headers=me.headers))
    assert [s["id"] for s in page] == [plain]  # "movie" hidden on an account's page
    context = ok(client.get(f"/api/v1/statuses/{plain}/context", headers=me.headers))
    assert context["descendants"] == []  # the spoiler reply hidden in the thread
    anonymous = ok(client.get(f"/api/v1/statuses/{plain}/context"))
    assert [s["id"] for s in anonymous["descendants"]] == [comment]
    expired = a_filter(client, me, ["nothing"], action="hide", context=["account"])
    assert len(ok(client.get(f"/api/v1/accounts/{author.id}/statuses", headers=me.headers))) == 0
    ok(client.put(f"/api/v2/filters/{expired['id']}", json={"expires_in": 1}, headers=me.headers))
    stored = components_filters(client, me)
    stored["filters"][-1]["expires_at"] = stored["filters"][-1]["expires_at"].replace(year=2000)
    save(client, me, stored)
    page = ok(client.get(f"/api/v1/accounts/{author.id}/statuses", headers=me.headers))
    assert [s["id"] for s in page] == [plain]  # the expired filter does nothing


def components_filters(client, user) -> dict:
    return client.application.extensions["socialapp"].keyword_filter_store.get(int(user.id))


def save(client, user, stored: dict) -> None:
    c = client.application.extensions["socialapp"]
    version = c.keyword_filter_store.replace(int(user.id), stored["version"], stored["filters"])
    c.matchers._versions.raise_to(int(user.id), version)


def test_a_status_filter_matches_the_status_and_its_boosts(client, masto):
    me, author, booster = masto(), masto(), masto()
    post = status(client, author, "plain words")
    boost = ok(client.post(f"/api/v1/statuses/{post}/reblog", headers=booster.headers))["id"]
    made = a_filter(client, me, [], context=["home"])
    added = ok(
        client.post(
            f"/api/v2/filters/{made['id']}/statuses", json={"status_id": post}, headers=me.headers
        )
    )
    again = client.post(
        f"/api/v2/filters/{made['id']}/statuses", json={"status_id": post}, headers=me.headers
    )
    assert ok(again) == added  # the same status again: the same FilterStatus
    shown = ok(client.get(f"/api/v1/statuses/{boost}", headers=me.headers))
    assert [r["status_matches"] for r in shown["filtered"]] == [[post]]
    assert [r["status_matches"] for r in shown["reblog"]["filtered"]] == [[post]]
    assert ok(client.get(f"/api/v2/filters/statuses/{added['id']}", headers=me.headers)) == added
    ok(client.delete(f"/api/v2/filters/statuses/{added['id']}", headers=me.headers))
    assert ok(client.get(f"/api/v1/statuses/{boost}", headers=me.headers))["filtered"] == []
    missing = client.post(
        f"/api/v2/filters/{made['id']}/statuses", json={"status_id": "1234567"}, headers=me.headers
    )
    refused(missing, 404)


@pytest.mark.parametrize("scope", ["read:statuses", "write:statuses"])
def test_filters_ask_for_mastodons_scopes(client, oauth_app, scope):
    me = MastodonUser(client, oauth_app, f"filters_{scope.replace(':', '_')}", scope=scope)
    refused(client.get("/api/v2/filters", headers=me.headers), 403)
    refused(create(client, me, title="t", context=["home"]), 403)
    refused(client.get("/api/v2/filters"), 401)


def test_mastodon_py_manages_filters_keywords_and_statuses(app, signup):
    """The client library apps are built on, unmodified, over a real HTTP server."""
    ada, bob = signup(), signup()
    with served_in_thread(app) as base:
        me, author = signed_in(base, (ada, bob), "filters")
        made = me.create_filter_v2(
            "Spoilers",
            ["home", "thread"],
            "warn",
            expires_in=86400,
            keywords_attributes=[{"keyword": "spoiler", "whole_word": True}],
        )
        assert made.title == "Spoilers" and made.filter_action == "warn"
        assert [k.keyword for k in made.keywords] == ["spoiler"] and made.expires_at
        keyword = me.add_filter_keyword_v2(made, "ending", whole_word=False)
        assert [k.keyword for k in me.filter_keywords_v2(made)] == ["spoiler", "ending"]
        posted = author.status_post("the ending of it")
        added = me.add_filter_status_v2(made, posted)
        assert str(me.filter_status_v2(added).status_id) == str(posted.id)
        assert [str(s.id) for s in me.filter_statuses_v2(made)] == [str(added.id)]
        seen = me.status(posted)
        assert seen.filtered[0].keyword_matches == ["ending"]
        assert [str(i) for i in seen.filtered[0].status_matches] == [str(posted.id)]
        changed = me.update_filter_v2(
            made, title="Renamed", keywords_attributes=[{"id": keyword.id, "_destroy": True}]
        )
        assert changed.title == "Renamed" and [k.keyword for k in changed.keywords] == ["spoiler"]
        me.delete_filter_keyword_v2(changed.keywords[0])
        me.delete_filter_status_v2(added)
        assert me.filter_v2(made).keywords == [] and me.filter_v2(made).statuses == []
        assert [f.id for f in me.filters_v2()] == [made.id]
        with pytest.raises(MastodonNotFoundError):
            author.filter_v2(made)
        me.delete_filter_v2(made)
        assert me.filters_v2() == []
        old = me.filter_create("old client", ["home", "notifications"], irreversible=True)
        assert me.filter(old).phrase == "old client" and me.filter(old).irreversible
        assert me.filter_update(old, phrase="older client", whole_word=False).phrase == (
            "older client"
        )
        [v1] = me.filters()
        assert (v1.id, v1.whole_word, v1.context) == (old.id, False, ["home", "notifications"])
        assert [k.keyword for k in me.filters_v2()[0].keywords] == ["older client"]
        with pytest.raises(MastodonNotFoundError):
            author.filter(old)
        me.filter_delete(old)
        assert me.filters() == []
