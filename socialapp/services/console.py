"""What the operator's console at ``/admin`` shows: the fan-out as it stands, adaptive mode's
newest decisions with the rates behind them, a reconciliation under way, the live figures
as short time series, and the forecast across thresholds.

Changes go through ``services.operators`` like the /v1 operator endpoints'; this module
only reads.
"""

from __future__ import annotations

import contextlib
import time

from socialapp.config import Settings
from socialapp.domain import series as charts
from socialapp.domain.adaptive import Rule
from socialapp.errors import Invalid, Unavailable
from socialapp.metrics import BUILT
from socialapp.queue import QUEUES, TaskQueue
from socialapp.services import adaptive, operators
from socialapp.stores.author_copies import AuthorCopies
from socialapp.stores.fanout_changes import FanoutChangeLog
from socialapp.stores.fanout_settings import FanoutSettingsStore
from socialapp.stores.follows import FollowStore
from socialapp.stores.rate_meters import RateMeters
from socialapp.stores.reader_activity import ReaderActivity
from socialapp.stores.series import STEP_SECONDS, SeriesStore
from socialapp.stores.users import HANDLE_PREFIX, UserStore

WINDOW_STEPS = 60  # the charts' span: 60 steps of 5 s, the last five minutes
RECONCILING_SHOWN = 20
QUEUE_NAMES = (*QUEUES, "unacked")


def status(
    fanout_settings: FanoutSettingsStore,
    author_copies: AuthorCopies,
    users: UserStore,
    fanout_changes: FanoutChangeLog,
) -> dict:
    """The settings in force, a reconciliation under way and the newest changes."""
    described = operators.describe_fanout(fanout_settings, author_copies, users)
    unsettled = sorted(author_copies.unsettled())
    shown = users.get_many(unsettled[:RECONCILING_SHOWN])
    changes = operators.changes(fanout_changes, 20)
    subjects = {c["subject"] for c in changes if "subject" in c}
    handles = {u["_id"]: u["handle"] for u in users.get_many(sorted(subjects))}
    for change in changes:
        if "subject" in change:
            change["subject_handle"] = handles.get(change["subject"], str(change["subject"]))
    return {
        **described,
        "reconciling": {
            "count": len(unsettled),
            "authors": [{"id": u["_id"], "handle": u["handle"]} for u in shown],
        },
        "changes": changes,
    }


def decisions(
    settings: Settings,
    users: UserStore,
    follows: FollowStore,
    rate_meters: RateMeters,
    activity: ReaderActivity,
    limit: int = 10,
    clock=time.time,
) -> list[dict]:
    """Adaptive mode's newest decisions, each with the rates measured now that weigh on it:
    the author's posts/s, their followers' reads/s and active followers (scaled up from a
    sample, as a round measures them) and the two costs the rule compares."""
    authors = users.newest_leanings(limit)
    now = clock()
    since = now - settings.adaptive_rate_window_seconds
    rule = Rule(settings.adaptive_cost_ratio, settings.adaptive_hysteresis)
    found = []
    measured = adaptive.measure(settings, follows, rate_meters, activity, authors, since, now)
    for author, rates in zip(authors, measured, strict=True):
        push_cost, pull_cost = rule.costs(rates)
        found.append(
            {
                "id": author["_id"],
                "handle": author.get("handle", str(author["_id"])),
                "leaning": author["fanout_leaning"],
                "at": author["fanout_leaning_at"],
                "followers": author.get("followers_count", 0),
                "posts_per_second": rates.posts,
                "reads_per_second": rates.reads,
                "active_followers": rates.active_followers,
                "push_cost": push_cost,
                "pull_cost": pull_cost,
            }
        )
    return found


def authors(users: UserStore, search: str, limit: int = 20) -> list[dict]:
    """Accounts whose handle starts with ``search``, or every overridden author without
    one: ``{id, handle, followers, override, leaning}``."""
    search = search.strip().lower()
    if search and not HANDLE_PREFIX.fullmatch(search):
        raise Invalid(
            "search: up to 30 of a-z, 0-9 and _", {"query": {"q": ["Not the start of a handle."]}}
        )
    found = users.with_handle_prefix(search, limit) if search else users.overridden(limit)
    return [
        {
            "id": u["_id"],
            "handle": u["handle"],
            "followers": u.get("followers_count", 0),
            "override": u.get("fanout_override", "auto"),
            "leaning": u.get("fanout_leaning"),
        }
        for u in found
    ]


def figures(series: SeriesStore, queue: TaskQueue, clock=time.time) -> dict:
    """The live figures over the last ``WINDOW_STEPS`` steps; first samples the gauges (queue
    depths, Redis memory) into the current step, which the next look will show."""
    now = clock()
    gauges: dict[str, float] = {}
    with contextlib.suppress(Unavailable):  # the broker is down: a gap in the chart
        gauges.update({f"queue:{name}": n for name, n in queue.depth().items()})
    gauges["memory"] = series.used_memory()
    series.put(now, gauges)
    window = series.window(now, WINDOW_STEPS)
    return {
        "step_seconds": STEP_SECONDS,
        "series": charts.charts(window, STEP_SECONDS, QUEUE_NAMES, BUILT),
    }
