"""The consistency audit's comparison: a first page as served against the store of record's.

Pure: the pages, the grace boundary and which served posts no longer exist are given. A
page holds post ids, newest first, at most ``limit`` of them; a full page says nothing
below its last id, so only the part both pages cover is compared, and only posts older
than the grace period (a delivery or a deletion may still be on its way for newer ones).
"""

from __future__ import annotations

import itertools
from collections.abc import Collection, Mapping

KINDS = ("missing", "extra", "deleted", "order")
# missing: expected, not served; extra: served and stored, not expected (an author no longer
# followed); deleted: served, no longer stored; order: served twice, or not newest first.

Findings = dict[str, list[int]]  # kind -> post ids, newest first; kinds without any left out


def compare(
    served: list[int],
    expected: list[int],
    limit: int,
    settled_before: int,
    gone: Collection[int] = (),
) -> Findings:
    """What is wrong with ``served`` against ``expected``. ``settled_before``: the first id
    still within the grace period (``ids.first_id_at``); ``gone``: served ids no longer
    stored. Order is checked over the whole served page: no delivery in flight excuses it."""
    floor = max((min(page) for page in (served, expected) if len(page) >= limit), default=0)
    shown = {i for i in served if floor <= i < settled_before}
    wanted = {i for i in expected if floor <= i < settled_before}
    unexpected = shown - wanted
    found = {
        "missing": wanted - shown,
        "extra": unexpected.difference(gone),
        "deleted": unexpected.intersection(gone),
        "order": _out_of_order(served),
    }
    return {kind: sorted(ids, reverse=True) for kind, ids in found.items() if ids}


def _out_of_order(served: list[int]) -> set[int]:
    """The ids served again, or served after an older one."""
    return {later for earlier, later in itertools.pairwise(served) if later >= earlier}


def confirmed(first: Mapping[str, list[int]], second: Mapping[str, list[int]]) -> Findings:
    """What two looks found alike: the same kind of fault on the same posts."""
    both = {kind: set(ids).intersection(second.get(kind, ())) for kind, ids in first.items()}
    return {kind: sorted(ids, reverse=True) for kind, ids in both.items() if ids}
