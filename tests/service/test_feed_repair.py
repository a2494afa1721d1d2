"""A page's cold path is a step of its own: where Redis lost the copies a page reads, the
fetch round reports each as data (``Missing``), the repair step (``FeedRepair``) loads or
rebuilds it, and the round runs once more. A home, a list, a hashtag and the public page
read after Redis lost everything repair each copy once and show what they showed before."""

from socialapp.feed_repair import FeedRepair


def test_pages_after_redis_lost_everything_repair_each_copy_once(
    client, signup, components, settle, monkeypatch
):
    ada, bob, star = (signup(h) for h in ("ada", "bob", "star"))
    for followee in (bob, star):
        assert client.put(f"/v1/me/following/{followee.id}", headers=ada.headers).status_code == 204
    assert client.put("/v1/me/tags/cats", headers=ada.headers).status_code == 204
    made = client.post("/v1/me/lists", json={"title": "stars"}, headers=ada.headers).json["id"]
    path = f"/v1/me/lists/{made}/members/{star.id}"
    assert client.put(path, headers=ada.headers).status_code == 204
    cat = signup("cat")  # followed by nobody: their post reaches ada through #cats
    for author, text in ((star, "#cats one"), (bob, "two"), (cat, "#cats three"), (star, "four")):
        answer = client.post("/v1/posts", json={"text": text}, headers=author.headers)
        assert answer.status_code == 201, answer.json
    settle()
    paths = (
        "/v1/timeline/home",
        f"/v1/me/lists/{made}/timeline",
        "/v1/tags/cats/timeline",
        "/v1/timelines/public",
    )

    def pages() -> list[list[str]]:
        found = [client.get(path, headers=ada.headers) for path in paths]
        assert all(page.status_code == 200 for page in found), [page.json for page in found]
        return [[item["id"] for item in page.json["items"]] for page in found]

    repaired = []
    before = pages()
    assert [len(page) for page in before] == [4, 2, 2, 4]  # every post, star's, #cats', every post
    repaired.clear()
    within = []  # a page's repair that hands on to ``any_feed`` is recorded once
    for name in ("home", "list", "any_feed"):
        kept = getattr(FeedRepair, name)

        def recording(self, *args, kept=kept):
            if not within:
                repaired.append(args[-1].what)  # the ``Missing`` a round reported
            within.append(True)
            try:
                return kept(self, *args)
            finally:
                within.pop()

        monkeypatch.setattr(FeedRepair, name, recording)
    components.redis.flushdb()
    assert pages() == before
    # Each copy lost is reported and repaired once, the round run again after each: the
    # home's (its reader away, their hidden set, followed hashtags, tagged set, outboxes:
    # the tagged set's rebuild brings back #cats' feed), the list's members and feed, the
    # public feed.
    expected = ["inactive", "hidden", "tags", "tagged", "outboxes", "members", "list", "shared"]
    assert repaired == expected
    repaired.clear()
    assert pages() == before
    assert repaired == []  # warm again: no round reports anything missing
