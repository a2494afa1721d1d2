"""Conformance: the real server that ``make run`` starts, driven by Mastodon.py, unmodified.

One client app; the author signs in as Mastodon 4.4's apps do, through the authorization-code
flow (the sign-in page posted as a browser posts it, the out-of-band code read off the page,
``log_in(code=...)``), the reader with the password grant scripts use. In each fan-out
mode (switched at runtime by the operator) the reader follows the author, the author posts
with idempotency keys, and once delivery has settled the reader pages through the home
timeline with ``fetch_next`` to the end and back with ``fetch_previous``: every post once, in
order. Then favourite, context, unfollow and delete, which leave the timeline empty again.
Followers and following are paged the same way, newest follow first.
"""

from __future__ import annotations

import html
import re
from operator import not_

import pytest
import requests
from mastodon import Mastodon
from mastodon.errors import MastodonAPIError

from tests.e2e.test_e2e_server import Server
from tests.helpers_processes import served
from tests.waiting import wait_for

OPERATOR = {"handle": "ops", "password": "operator password"}
PASSWORD = "correct horse"
POSTS_PER_MODE = 5


@pytest.fixture
def server(tmp_path):
    log_path = tmp_path / "server.log"
    values = dict(
        SOCIALAPP_OPERATOR_HANDLE=OPERATOR["handle"],
        SOCIALAPP_OPERATOR_PASSWORD=OPERATOR["password"],
    )
    with served(log_path, **values) as (process, port):
        yield Server(process, port)


def sign_in(base: str, app: tuple[str, str], handle: str) -> Mastodon:
    client = Mastodon(*app, api_base_url=base, version_check_mode="created")
    client.log_in(handle, PASSWORD, allow_http=True)
    return client


def sign_in_with_a_code(base: str, app: tuple[str, str], handle: str) -> tuple[Mastodon, str]:
    """As an app does: send the person to the sign-in page, take the code they copy; the
    client and the code."""
    client = Mastodon(*app, api_base_url=base, version_check_mode="created")
    url = client.auth_request_url(state="conformance-state", allow_http=True)
    with requests.Session() as browser:
        page = browser.get(url, timeout=30)
        assert page.status_code == 200 and "conformance" in page.text
        form = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page.text))
        form = {name: html.unescape(value) for name, value in form.items()}
        form |= {"username": handle, "password": PASSWORD, "decision": "approve"}
        shown = browser.post(f"{base}/oauth/authorize", data=form, timeout=30)
    assert shown.status_code == 200, shown.text
    code = re.search(r'<output class="code" id="code">([^<]+)</output>', shown.text).group(1)
    client.log_in(code=code, allow_http=True)
    return client, code


def every_page(client: Mastodon) -> tuple[list[str], list[str]]:
    """The home timeline's ids down with ``fetch_next``, then up with ``fetch_previous``."""
    pages = [client.timeline_home(limit=2)]
    while (page := client.fetch_next(pages[-1])) is not None:
        pages.append(page)
    down = [str(status.id) for page in pages for status in page]
    page = pages[-1]
    up = [str(status.id) for status in page]
    while (page := client.fetch_previous(page)) is not None and page:
        up = [str(status.id) for status in page] + up
    return down, up


def switch(server: Server, token: str, mode: str, threshold: int) -> None:
    """Switch the fan-out mode as an operator, and wait until it has been reconciled."""
    body = {"mode": mode, "celebrity_threshold": threshold}
    server.call("PUT", "/v1/admin/fanout", body, token)
    settings = lambda: server.call("GET", "/v1/admin/fanout", token=token)[0]  # noqa: E731
    wait_for(settings, f"the switch to {mode}", until=lambda fanout: fanout["settled"])


def home_ids(client: Mastodon) -> list[str]:
    return [str(status.id) for status in client.timeline_home(limit=40)]


def test_mastodon_py_drives_socialapp_in_every_fanout_mode(server, tmp_path):
    base = f"http://127.0.0.1:{server.port}"
    app = Mastodon.create_app("conformance", api_base_url=base)
    for handle in ("ada", "bob", "cyd"):
        server.call("POST", "/v1/users", {"handle": handle, "password": PASSWORD}, expect=201)
    (ada, code), bob = sign_in_with_a_code(base, app, "ada"), sign_in(base, app, "bob")
    cyd = sign_in(base, app, "cyd")
    assert ada.app_verify_credentials().name == "conformance"
    operator, _ = server.call("POST", "/v1/auth/token", OPERATOR)
    assert ada.retrieve_mastodon_version().startswith("4.3.0")
    ada_account = bob.account_lookup("ada")
    assert ada_account.id == ada.account_verify_credentials().id

    # Hybrid with threshold 1 pulls the author (1 follower): a celebrity read at request time;
    # so does adaptive until it has measured the author, while it counts every read and post.
    modes = (("write", 1000), ("read", 1000), ("hybrid", 1), ("adaptive", 1))
    for mode, threshold in modes:
        switch(server, operator["access_token"], mode, threshold)
        assert home_ids(bob) == []  # also marks the reader active, so fan-out delivers to him
        assert bob.account_follow(ada_account).following
        assert bob.account_relationships(ada_account)[0].following
        posted = [
            ada.status_post(f"{mode} {n}", idempotency_key=f"{mode}-{n}")
            for n in range(POSTS_PER_MODE)
        ]
        again = ada.status_post(f"{mode} 0", idempotency_key=f"{mode}-0")
        assert again.id == posted[0].id
        expected = [str(status.id) for status in reversed(posted)]
        wait_for(lambda: home_ids(bob), f"delivery in {mode} mode", until=expected.__eq__)

        down, up = every_page(bob)
        assert down == expected and up == expected, mode

        assert bob.account_mute(ada_account, duration=3600).muting
        assert home_ids(bob) == [], f"muted in {mode} mode"
        assert [str(a.id) for a in bob.mutes()] == [str(ada_account.id)]
        assert bob.mutes()[0].mute_expires_at is not None
        assert not bob.account_unmute(ada_account).muting
        assert home_ids(bob) == expected, f"unmuted in {mode} mode"

        liked = bob.status_favourite(posted[2])
        assert liked.favourited and liked.favourites_count == 1
        replied = bob.status_reply(posted[2], "nice")  # as an app replies: "@ada nice"
        assert str(replied.in_reply_to_id) == str(posted[2].id) and "nice" in replied.content
        context = bob.status_context(posted[2])
        assert [str(s.id) for s in context.descendants] == [str(replied.id)]
        assert [str(s.in_reply_to_id) for s in context.descendants] == [str(posted[2].id)]
        # ada boosts a post of cyd's, whom bob does not follow: bob's home shows the boost
        by_cyd = cyd.status_post(f"{mode} by cyd")
        boost = ada.status_reblog(by_cyd)
        assert boost.reblog.id == by_cyd.id and boost.reblog.reblogged
        assert boost.reblog.reblogs_count == 1 and boost.account.id == ada_account.id
        newest = [str(boost.id)]
        wait_for(lambda: home_ids(bob)[:1], f"the boost in {mode} mode", until=newest.__eq__)
        [shown] = bob.timeline_home(limit=1)
        assert shown.reblog.id == by_cyd.id and not shown.reblog.reblogged
        assert not ada.status_unreblog(by_cyd).reblogged
        assert home_ids(bob) == expected, f"unboosted in {mode} mode"
        cyd.status_delete(by_cyd)

        assert not bob.account_unfollow(ada_account).following
        for status in posted:
            ada.status_delete(status)
        wait_for(lambda: home_ids(bob), "unfollow and deletes to empty the home", until=not_)
        assert home_ids(ada) == []

    bob_account = ada.account_lookup("bob")
    blocked = ada.account_block(bob_account)
    assert blocked.blocking and not blocked.following and not blocked.followed_by
    assert bob.account_relationships(ada_account)[0].blocked_by
    with pytest.raises(MastodonAPIError):  # 403 while the block stands
        bob.account_follow(ada_account)
    assert [str(a.id) for a in ada.blocks()] == [str(bob_account.id)]
    assert not ada.account_unblock(bob_account).blocking
    assert bob.account_follow(ada_account).following

    token = bob.access_token
    server.call("GET", "/v1/timeline/home", token=token)  # an OAuth token works on /v1 too
    bob.revoke_access_token(allow_http=True)
    server.call("GET", "/v1/timeline/home", token=token, expect=401)
    logged = (tmp_path / "server.log").read_text()
    assert "/oauth/token" in logged and "/oauth/authorize" in logged  # the requests are there
    for secret in (code, token, ada.access_token, app[1], PASSWORD):
        assert secret not in logged  # the server's log holds no code, token or password


def test_mastodon_py_pages_followers_and_following_newest_first(server):
    """Followers and following come newest follow first; Mastodon.py pages down through
    them with ``fetch_next`` (Link rel="next") and back up with ``fetch_previous``
    (rel="prev", by ``since_id`` as Mastodon links these lists)."""
    base = f"http://127.0.0.1:{server.port}"
    app = Mastodon.create_app("conformance", api_base_url=base)
    handles = ("ada", "bob", "cyd", "dee", "eve")
    for handle in handles:
        server.call("POST", "/v1/users", {"handle": handle, "password": PASSWORD}, expect=201)
    clients = {handle: sign_in(base, app, handle) for handle in handles}
    ada = clients["ada"].account_lookup("ada")
    for handle in handles[1:]:  # eve's is the newest follow
        assert clients[handle].account_follow(ada).following
    for other in ("eve", "bob"):
        clients["cyd"].account_follow(clients["cyd"].account_lookup(other))
    reader = clients["bob"]

    pages = [reader.account_followers(ada, limit=2)]
    while (page := reader.fetch_next(pages[-1])) is not None:
        pages.append(page)
    assert [[account.acct for account in page] for page in pages] == [
        ["eve", "dee"],
        ["cyd", "bob"],
    ]
    above = reader.fetch_previous(pages[-1])  # since_id: the newest above the last page
    assert [account.acct for account in above] == ["eve", "dee"]
    assert reader.fetch_previous(pages[0]) == []  # nobody has followed ada since

    following = reader.account_following(clients["cyd"].account_lookup("cyd"), limit=1)
    assert [account.acct for account in following] == ["bob"]  # cyd followed bob last
    older = reader.fetch_next(following)
    assert [account.acct for account in older] == ["eve"]
    assert [account.acct for account in reader.fetch_next(older)] == ["ada"]
    assert [account.acct for account in reader.fetch_previous(older)] == ["bob"]
