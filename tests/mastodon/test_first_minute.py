"""An app's first minute: the calls a Mastodon app such as Phanpy makes as it starts, made by
Mastodon.py, unmodified, against the real server ``make run`` starts (its own redis-server,
worker and streaming process). Every call answers (none 404s: Mastodon.py raises on any
error) in the shape Mastodon's documentation gives, and the user stream opens and carries
the account's own new status.

Mastodon.py checks each method against the version the server reports (4.3.0): a method of
a later Mastodon raises before it is called. Filters v2, grouped notifications and the
notification policy (``/api/v2/filters``, ``/api/v2/notifications``, its ``policy``) are
called by a test of their own, so that a server without them fails that test alone.
"""

from __future__ import annotations

import time

import pytest

from socialapp.domain.trends import day_of
from tests.e2e.test_e2e_server import Server
from tests.e2e.test_streaming import Updates, marked
from tests.helpers_processes import served
from tests.mastodon.oauth_flow import mastodon_py
from tests.waiting import wait_for

PASSWORD = "correct horse"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log_path = tmp_path_factory.mktemp("first_minute") / "server.log"
    values = dict(
        SOCIALAPP_RATE_LIMITS_ENABLED="false",
        SOCIALAPP_ARGON2_TIME_COST="1",
        SOCIALAPP_ARGON2_MEMORY_KIB="64",
    )
    with served(log_path, **values) as (process, port):
        yield Server(process, port)


_handles = iter(range(10**6))


def signed_in(server: Server) -> tuple:
    """A new account, signed in as an app signs in, with Mastodon.py's version check on:
    the app and the account's id."""
    base = f"http://127.0.0.1:{server.port}"
    handle = f"phanpy{next(_handles)}"
    made, _ = server.call("POST", "/v1/users", {"handle": handle, "password": PASSWORD}, expect=201)
    [app] = mastodon_py(base, [handle], ("read", "write", "follow"), version_check_mode="created")
    return app, made["id"]


def test_an_apps_first_minute_answers_every_call(server):
    app, me = signed_in(server)

    instance = app.instance_v2()
    assert instance.configuration.urls.streaming.startswith("ws")
    assert instance.configuration.statuses.max_characters == 500
    account = app.account_verify_credentials()
    assert str(account.id) == me and account.source.privacy == "public"
    assert app.preferences()["posting:default:visibility"] == "public"
    assert app.markers_get(["home", "notifications"]) == {}
    assert app.lists() == [] and app.followed_tags() == []
    assert app.custom_emojis() == [] and app.announcements() == []
    assert app.notifications() == []
    assert app.timeline_home() == []

    listener = Updates()
    stream = app.stream_user(listener, run_async=True, reconnect_async=False)
    try:
        marked(server, me)
        posted = app.status_post("good morning #coffee")
        wait_for(lambda: listener.ids, "the own status on the user stream")
        assert listener.ids == [str(posted.id)]
    finally:
        stream.close()

    [tag] = app.trending_tags()
    assert tag.name == "coffee" and len(tag.history) == 7
    assert tag.history[0].uses == "1" and tag.history[0].day.timestamp() == day_of(time.time())
    assert app.trending_statuses() == [] and app.trending_links() == []
    assert app.tag_follow("coffee").following
    [followed] = app.followed_tags()
    assert followed.name == "coffee" and followed.history[0].accounts == "1"
    saved = app.markers_set(["home", "notifications"], [posted.id, 1])
    assert str(saved.home.last_read_id) == str(posted.id)
    assert app.markers_get(["home", "notifications"]).home.version == 0


def test_an_apps_first_minute_reads_filters_v2_and_grouped_notifications(server):
    """Served by the filters and grouped-notifications work: a server without them 404s,
    and one reporting a version before 4.3 is refused them by the client library."""
    app, me = signed_in(server)
    assert app.retrieve_mastodon_version().startswith("4.3.0")
    assert app.filters_v2() == [] and app.filters() == []
    grouped = app.grouped_notifications()
    assert grouped.notification_groups == [] and grouped.accounts == []
    assert grouped.statuses == []
    policy = app.notifications_policy()
    assert policy.for_not_following == "accept" and policy.summary.pending_requests_count == 0
    assert app.notification_requests() == [] and app.notifications_merged() is True

    fans = [signed_in(server)[0] for _ in range(2)]
    for fan in fans:
        fan.account_follow(me)
    found = wait_for(
        lambda: app.grouped_notifications(expand_accounts="partial_avatars"),
        "the follows grouped",
        until=lambda page: (
            page.notification_groups and page.notification_groups[0].notifications_count == 2
        ),
    )
    [group] = found.notification_groups
    assert group.type == "follow" and len(group.sample_account_ids) == 2
    assert [a.id for a in found.accounts] == group.sample_account_ids[:1]
    assert [a.id for a in found.partial_accounts] == group.sample_account_ids[1:]
    assert app.unread_grouped_notifications_count() == 1
    assert [a.id for a in app.grouped_notification_accounts(group.group_key)] == (
        group.sample_account_ids
    )
