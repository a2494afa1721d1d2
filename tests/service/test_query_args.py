"""Query strings' arguments are remembered per view and string (``api.base.QueryCache``):
the same string gives the same page every time, a view changing its arguments changes no
later request's, and a bad string is refused every time, as the first."""

from __future__ import annotations

from socialapp.api.base import QUERY_STRING_KEPT_BYTES, QueryCache


def _tagged_posts(client, author) -> None:
    for text in ("#cats one", "#dogs two", "#birds three"):
        answer = client.post("/v1/posts", json={"text": text}, headers=author.headers)
        assert answer.status_code == 201


def test_the_same_query_string_pages_alike_every_time(client, signup):
    _tagged_posts(client, signup())
    # The view takes any/all/none out of its arguments: a second read must still see them.
    query = "/v1/tags/cats/timeline?any=dogs&none=birds&limit=5"
    pages = [client.get(query) for _ in range(3)]
    texts = [[post["text"] for post in page.json["items"]] for page in pages]
    assert all(page.status_code == 200 for page in pages)
    assert texts == [["#dogs two", "#cats one"]] * 3
    first = client.get("/v1/tags/cats/timeline?limit=1")
    assert [p["text"] for p in first.json["items"]] == ["#cats one"]
    assert first.json["next_max_id"] is not None


def test_a_bad_query_string_is_refused_every_time(client):
    for query in ("limit=0", "limit=abc", "limit=5&limit=6", "max_id=x", "nope=1"):
        answers = [client.get(f"/v1/timelines/public?{query}") for _ in range(2)]
        assert [a.status_code for a in answers] == [422, 422], query
        assert answers[0].json == answers[1].json
    assert client.get("/v1/timelines/public?limit=5").status_code == 200
    assert client.get("/v1/timelines/public?limit=500").status_code == 422


def test_the_cache_keeps_the_newest_used_and_hands_out_copies():
    cache = QueryCache(size=2)
    cache.put("a", {"limit": 20, "any": ["x"]})
    given = cache.get("a")
    given["any"].append("y")
    given.pop("limit")
    assert cache.get("a") == {"limit": 20, "any": ["x"]}
    cache.put("b", {"limit": 5})
    cache.get("a")  # used last: "b" goes first
    cache.put("c", {"limit": 6})
    assert cache.get("b") is None
    assert cache.get("a") is not None and cache.get("c") == {"limit": 6}
    cache.put("d", {"when": object()})  # not a plain value: not kept
    assert cache.get("d") is None


def test_long_query_strings_are_parsed_every_time_not_kept():
    """An attacker's thousands of distinct long strings cost parsing, never cache memory."""
    cache, loads = QueryCache(size=10), []

    def load(n):
        loads.append(n)
        return {"limit": n}

    short, long = b"limit=5", b"limit=5&" + b"x" * QUERY_STRING_KEPT_BYTES
    assert cache.loaded("view", short, lambda: load(1)) == {"limit": 1}
    assert cache.loaded("view", short, lambda: load(2)) == {"limit": 1}  # kept
    for n in range(3, 6):
        assert cache.loaded("view", long, lambda n=n: load(n)) == {"limit": n}
    assert loads == [1, 3, 4, 5]
    assert cache.get(("view", long)) is None and cache.get(("view", short)) == {"limit": 1}


def test_mastodon_pages_remember_query_strings_alike(client, signup):
    _tagged_posts(client, signup())
    query = "/api/v1/timelines/tag/cats?any[]=dogs&none[]=birds&limit=5"
    pages = [client.get(query) for _ in range(2)]
    assert [[s["content"] for s in page.json] for page in pages] == [
        ["<p>#dogs two</p>", "<p>#cats one</p>"]
    ] * 2
    for query in ("max_id=abc", "all[]=%00", "any[]=a&" * 5, "none[]=a%20b"):
        answers = [client.get(f"/api/v1/timelines/tag/cats?{query}") for _ in range(2)]
        assert [a.status_code for a in answers] == [422, 422], query
        assert answers[0].json == answers[1].json and "error" in answers[0].json
