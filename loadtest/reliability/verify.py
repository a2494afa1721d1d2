"""After the load: every acknowledged post exists (unless deleted) and, once delivery has
settled, is in the home timeline of every sampled follower of its author exactly once.

Settled means a round of reading every sampled timeline (all pages) finds nothing missing;
rounds repeat until then or until the timeout, after which anything still missing is lost.
A post shown twice, a deleted post or a post of someone not followed counts in any round.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor

from loadtest.api_client import Api
from loadtest.reliability.traffic import Account, Like, Post


def verify(
    api: Api,
    acknowledged: list[Post],
    deletes: dict[str, int],
    sample: list[Account],
    timeout: float,
) -> dict:
    """``deletes``: what each DELETE was answered; a post is deleted if it is gone now."""
    started = time.monotonic()
    deleted = {post_id for post_id in deletes if _status(api, post_id) == 404}
    by_author: dict[str, set[str]] = defaultdict(set)
    for post_id, author in acknowledged:
        if post_id not in deleted:
            by_author[author].add(post_id)
    duplicates: set[tuple[str, str]] = set()
    shown_deleted: set[tuple[str, str]] = set()
    foreign: set[tuple[str, str]] = set()
    unordered: set[str] = set()
    rounds = 0
    while True:
        rounds += 1
        with ThreadPoolExecutor(4) as pool:
            checks = list(pool.map(lambda r: _check(api, r, by_author, deleted), sample))
        for check in checks:
            duplicates |= {(check["reader"], p) for p in check["duplicates"]}
            shown_deleted |= {(check["reader"], p) for p in check["deleted"]}
            foreign |= {(check["reader"], p) for p in check["foreign"]}
            if not check["ordered"]:
                unordered.add(check["reader"])
        missing = [(check["reader"], p) for check in checks for p in check["missing"]]
        if not missing or time.monotonic() - started > timeout:
            break
        time.sleep(2)
    settle_seconds = time.monotonic() - started
    stored = _stored(api, acknowledged, deleted)
    lost = sorted(set(stored["missing"]) | {post_id for _, post_id in missing})
    return {
        "settled": not missing,
        "settle_seconds": round(settle_seconds, 1),
        "rounds": rounds,
        "posts_acknowledged": len(acknowledged),
        "posts_deleted_by_author": len(deleted),
        "deletes_answered_error_but_done": {
            post_id: code for post_id, code in deletes.items() if post_id in deleted and code != 204
        },
        "deletes_answered_204_but_not_done": sorted(
            post_id for post_id, code in deletes.items() if code == 204 and post_id not in deleted
        ),
        "posts_found": stored["found"],
        "posts_lost": len(lost),
        "lost": lost[:50],
        "lost_ids": lost,  # all of them, for the figures after each fault (not reported)
        "deleted_ids": sorted(deleted),  # for the notifications' check (not reported)
        "readers_checked": len(sample),
        "timeline_entries_checked": sum(len(check["expected"]) for check in checks),
        "posts_checked_in_timelines": len(set().union(*(c["expected"] for c in checks))),
        "missing_from_timelines": len(missing),
        "duplicates": len(duplicates),
        "deleted_shown": len(shown_deleted),
        "foreign_shown": len(foreign),
        "unordered_timelines": len(unordered),
        "examples": {
            "missing": missing[:10],
            "duplicates": sorted(duplicates)[:10],
            "deleted_shown": sorted(shown_deleted)[:10],
            "foreign_shown": sorted(foreign)[:10],
        },
    }


def verify_notifications(
    api: Api, likes: list[Like], deleted: set[str], token_of, timeout: float
) -> dict:
    """Every like acknowledged (204) on a post still stored notified the post's author
    (``token_of``: an account's token): their favourites are read until none is missing
    or ``timeout`` has passed, after which a missing one is lost."""
    expected = {(like.author_id, like.liker_id, like.post_id) for like in likes}
    expected = {e for e in expected if e[2] not in deleted and e[0] != e[1]}
    started, rounds = time.monotonic(), 0
    while True:
        rounds += 1
        found = set()
        for author in {e[0] for e in expected}:
            items = api.pages("/v1/me/notifications?types=favourite", token=token_of(author))
            found |= {(author, n["account"]["id"], n["post"]["id"]) for n in items if n["post"]}
        missing = sorted(expected - found)
        if not missing or time.monotonic() - started > timeout:
            break
        time.sleep(2)
    return {
        "likes_acknowledged": len(likes),
        "expected": len(expected),
        "lost": len(missing),
        "settle_seconds": round(time.monotonic() - started, 1),
        "rounds": rounds,
        "examples": missing[:10],
    }


def _check(api: Api, reader: Account, by_author: dict[str, set[str]], deleted: set[str]) -> dict:
    following = api.pages(f"/v1/users/{reader.id}/following", token=reader.token)
    visible = {user["id"] for user in following} | {reader.id}
    items = api.pages("/v1/timeline/home", token=reader.token, cursor="max_id")
    ids = [post["id"] for post in items]
    counts = Counter(ids)
    expected = set().union(*(by_author.get(author, set()) for author in visible))
    return {
        "reader": reader.handle,
        "expected": expected,
        "missing": sorted(expected - counts.keys()),
        "duplicates": [post_id for post_id, n in counts.items() if n > 1],
        "deleted": sorted(deleted & counts.keys()),
        "foreign": [post["id"] for post in items if post["author_id"] not in visible],
        "ordered": [int(i) for i in ids] == sorted((int(i) for i in ids), reverse=True),
    }


def _stored(api: Api, acknowledged: list[Post], deleted: set[str]) -> dict:
    """``GET /v1/posts/{id}`` for every acknowledged post: found, or missing (not deleted)."""
    with ThreadPoolExecutor(8) as pool:
        statuses = list(pool.map(lambda post: _status(api, post[0]), acknowledged))
    missing = [
        post_id
        for (post_id, _), code in zip(acknowledged, statuses, strict=True)
        if code != 200 and not (code == 404 and post_id in deleted)
    ]
    return {"found": statuses.count(200), "missing": missing}


def _status(api: Api, post_id: str) -> int:
    """What ``GET /v1/posts/{id}`` answers; a 5xx is asked again, it is no verdict."""
    for _ in range(3):
        answer = api.call("GET", f"/v1/posts/{post_id}")
        if 0 < answer.status < 500:
            return answer.status
        time.sleep(1)
    return answer.status
