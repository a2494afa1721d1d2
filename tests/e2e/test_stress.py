"""The stress harness (``make stress``) at a tiny size, and proof that its checks can fail: a
run with a fault injected exits 1 with the evidence, and each invariant of the checker
flags a fabricated traversal that breaks it (and nothing that is only ambiguous)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from loadtest.processes import ROOT, clean_env
from loadtest.stress.checks import (
    LIST,
    Traversal,
    boost_rule,
    check_settled,
    check_traversal,
    expected_timeline,
)
from loadtest.stress.ledger import INFINITY, Change, Ledger, View

pytestmark = pytest.mark.slow  # long: started first (tests/conftest.py)

TINY = ["--authors", "2", "--readers", "2", "--seconds", "1"]
# A busy loop takes a core for the whole run (from the suite's other worker too): the passing
# runs have one, as ``make stress`` does; a fault's runs none, its evidence found by the
# settled checks whatever the machine's load (the seeded jitter orders the run).
LOADED, QUIET = ["--burners", "1"], ["--burners", "0"]
READER, ALICE, BOB = 1, 10, 20  # the reader follows Alice all along, Bob not
AUTHORS = {6: ALICE, 5: ALICE, 4: BOB, 3: ALICE, 2: READER}  # 6 boosts 4 (``BOOSTS``)
BOOSTS = {6: 4}


def stress(out, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    run = subprocess.run(
        [sys.executable, "-m", "loadtest.stress", *TINY, *args, "--out", str(out)],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = out / "report.json"
    assert report.exists(), run.stdout[-3000:] + run.stderr[-3000:]
    return run, json.loads(report.read_text())


def test_two_tiny_runs_pass_and_report_their_figures(tmp_path):
    run, report = stress(tmp_path, *LOADED, "--runs", "2", "--seed", "7")
    totals = report["totals"]
    assert run.returncode == 0, json.dumps(totals["violations_by_kind"]) + run.stdout[-3000:]
    assert totals["runs"] == 2 and totals["violations"] == 0 and totals["failing_seeds"] == []
    assert [r["seed"] for r in report["runs"]] == [7, 8]
    for one in report["runs"]:
        assert one["traversals"] > 0 and one["pages"] >= one["traversals"]
        assert sum(one["operations"].values()) > 0 and one["required"] > 0
        assert len(one["settle_seconds"]) == 6  # before, after, then one per mode
    assert totals["traversals"] == sum(r["traversals"] for r in report["runs"])
    assert report["burners"] == 1 and report["switch_interval"] == 1e-5
    assert "PASS: 0 violations in 2 runs" in (tmp_path / "report.md").read_text()
    assert run.stdout.count("\nrun ") == 2


def test_a_fault_is_found_with_a_seed_to_replay(tmp_path):
    run, report = stress(
        tmp_path, *QUIET, "--runs", "1", "--seed", "3", "--fault", "phantom-delete"
    )
    totals = report["totals"]
    assert run.returncode == 1, run.stdout[-3000:]
    assert totals["failing_seeds"] == [3] and totals["violations"] > 0
    assert {"deleted post shown", "settled timeline wrong"} & set(totals["violations_by_kind"])
    evidence = report["runs"][0]["evidence"][0]
    assert evidence["kind"] and evidence["at"] is not None
    markdown = (tmp_path / "report.md").read_text()
    assert "FAIL:" in markdown
    replay = "--authors 2 --readers 2 --seconds 1.0 --fault phantom-delete --runs 1 --seed 3"
    assert f"`python -m loadtest.stress {replay}`" in markdown


def test_a_list_fault_is_found_by_the_list_checks(tmp_path):
    """Deliveries that skip the lists' feeds: seed 3 starts in write mode, where the posts
    made before the writer are pushed to the lists, so the first settled check misses them."""
    run, report = stress(
        tmp_path, *QUIET, "--runs", "1", "--seed", "3", "--fault", "lose-list-deliveries"
    )
    assert run.returncode == 1, run.stdout[-3000:]
    kinds = report["totals"]["violations_by_kind"]
    assert kinds.get("settled list wrong"), kinds
    wrong = next(v for v in report["runs"][0]["evidence"] if v["kind"] == "settled list wrong")
    assert wrong["missing"] and not wrong["unexpected"]


def view(
    edges=None, deleted=None, authors=None, members=None, tags=None, tagged=(), following_tag=False
) -> View:
    """A ledger: the reader follows Alice from the start and their list holds her;
    ``deleted``: post -> (began, returned); ``edges``: (reader, author) -> changes;
    ``members``: (reader, author) -> changes of the list; ``tags``: the reader's changes of
    the tag, which they follow at first if ``following_tag``; ``tagged``: the public posts
    with the tag."""
    deleted = deleted or {}
    return View(
        authors or {5: ALICE, 4: BOB, 3: ALICE, 2: READER},
        {post: began for post, (began, _) in deleted.items()},
        {post: returned for post, (_, returned) in deleted.items() if returned < INFINITY},
        edges or {},
        frozenset({(READER, ALICE)}),
        members or {},
        frozenset({(READER, ALICE)}),
        {READER: tags} if tags else {},
        frozenset({READER} if following_tag else ()),
        frozenset(tagged),
    )


def traversal(items, delivered=(), began=10.0, ended=11.0, error=None, feed="home") -> Traversal:
    return Traversal(
        READER, began, ended, [(p, AUTHORS[p]) for p in items], frozenset(delivered),
        frozenset({"write"}), error, feed,
    )  # fmt: skip


def kinds(found) -> list[str]:
    return [v["kind"] for v in found[0]]


def test_a_whole_timeline_passes():
    assert check_traversal(view(), traversal([5, 3, 2], delivered={5, 3, 2})) == ([], 3)


def test_repeats_disorder_and_errors_are_flagged():
    assert kinds(check_traversal(view(), traversal([5, 3, 3, 2]))) == ["repeated", "out of order"]
    assert kinds(check_traversal(view(), traversal([3, 5]))) == ["out of order"]
    errored = traversal([5], delivered={3}, error="503: unavailable")
    assert kinds(check_traversal(view(), errored)) == ["error"]  # nothing called missing


def test_a_post_deleted_before_the_traversal_is_flagged_one_being_deleted_is_not():
    before = view(deleted={3: (8.0, 9.0)})
    found = check_traversal(before, traversal([5, 3]))
    assert kinds(found) == ["deleted post shown"] and found[0][0]["posts"] == [3]
    during = view(deleted={3: (9.0, 10.5)})
    assert check_traversal(during, traversal([5, 3])) == ([], 0)


def test_an_unfollowed_author_is_flagged_unless_the_edge_changed_meanwhile():
    found = check_traversal(view(), traversal([5, 4]))
    assert kinds(found) == ["post of an unfollowed author"] and found[0][0]["authors"] == [BOB]
    followed = {(READER, BOB): [Change(9.0, 10.2, True)]}  # returned during the traversal
    assert check_traversal(view(edges=followed), traversal([5, 4])) == ([], 0)
    unfollowed = {(READER, ALICE): [Change(8.0, 9.0, False)]}
    assert kinds(check_traversal(view(edges=unfollowed), traversal([5]))) == [
        "post of an unfollowed author"
    ]


def test_a_delivered_post_missing_is_flagged_unless_ambiguous():
    found = check_traversal(view(), traversal([5], delivered={5, 3, 2}))
    assert kinds(found) == ["delivered post missing"] and found[0][0]["posts"] == [3, 2]
    assert found[1] == 3  # posts it had to show
    assert check_traversal(view(), traversal([5], delivered={5, 4})) == ([], 1)  # Bob's
    unfollowing = {(READER, ALICE): [Change(10.5, INFINITY, False)]}  # still running
    assert check_traversal(view(edges=unfollowing), traversal([5], delivered={3})) == ([], 0)
    deleting = view(deleted={3: (10.9, INFINITY)})
    assert check_traversal(deleting, traversal([5], delivered={3})) == ([], 0)


def test_a_settled_timeline_must_be_exact():
    refollowed = {(READER, BOB): [Change(1.0, 2.0, True)]}
    settled = view(edges=refollowed, deleted={3: (3.0, 4.0)})
    assert check_settled(settled, READER, [(5, ALICE), (4, BOB), (2, READER)], 0.0, "") == []
    found = check_settled(settled, READER, [(5, ALICE), (3, ALICE), (2, READER)], 0.0, "write")
    assert found[0]["missing"] == [(4, BOB)] and found[0]["unexpected"] == [(3, ALICE)]
    assert found[0]["deleted_among_unexpected"] == 1
    swapped = check_settled(settled, READER, [(4, BOB), (5, ALICE), (2, READER)], 0.0, "")
    assert swapped[0]["order_or_repeats_wrong"]


def test_a_list_shows_its_members_only_unless_membership_changed_meanwhile():
    assert check_traversal(view(), traversal([5, 3], {5, 3}, feed=LIST)) == ([], 2)
    found = check_traversal(view(), traversal([5, 4, 2], feed=LIST))  # Bob, and the owner
    assert kinds(found) == ["post of a non-member"] and found[0][0]["authors"] == [READER, BOB]
    assert found[0][0]["feed"] == LIST
    added = {(READER, BOB): [Change(9.0, 10.2, True)]}  # returned during the traversal
    assert check_traversal(view(members=added), traversal([5, 4], feed=LIST)) == ([], 0)
    removed = {(READER, ALICE): [Change(8.0, 9.0, False)]}  # before it: Alice is a stranger
    assert kinds(check_traversal(view(members=removed), traversal([5], feed=LIST))) == [
        "post of a non-member"
    ]


def test_a_members_delivered_post_missing_from_the_list_is_flagged_unless_ambiguous():
    found = check_traversal(view(), traversal([5], {5, 3, 4, 2}, feed=LIST))  # 4, 2: no member
    assert kinds(found) == ["delivered post missing"] and found[0][0]["posts"] == [3]
    removing = {(READER, ALICE): [Change(10.5, INFINITY, False)]}  # still running
    assert check_traversal(view(members=removing), traversal([5], {3}, feed=LIST)) == ([], 0)


def test_a_tagged_post_of_a_stranger_shows_in_the_home_while_the_tag_is_followed():
    tagged = view(tagged={4}, following_tag=True)
    assert check_traversal(tagged, traversal([5, 4], {5, 4})) == ([], 2)
    found = check_traversal(tagged, traversal([5], {4}))
    assert kinds(found) == ["delivered post missing"] and found[0][0]["posts"] == [4]
    not_following = view(tagged={4})
    assert kinds(check_traversal(not_following, traversal([5, 4]))) == [
        "post of an unfollowed author"
    ]
    unlisted = view(following_tag=True)  # 4 carries the tag but is not in its feed
    assert kinds(check_traversal(unlisted, traversal([5, 4]))) == ["post of an unfollowed author"]
    unfollowing = view(tagged={4}, following_tag=True, tags=[Change(10.5, INFINITY, False)])
    assert check_traversal(unfollowing, traversal([5, 4], {4})) == ([], 0)
    unfollowed = view(tagged={4}, following_tag=True, tags=[Change(8.0, 9.0, False)])
    assert kinds(check_traversal(unfollowed, traversal([5, 4]))) == ["post of an unfollowed author"]
    assert check_traversal(tagged, traversal([5, 4], {4}, feed=LIST))[0][0]["authors"] == [BOB]


def test_a_boost_is_never_required_and_goes_with_its_post():
    boosted = view(authors=AUTHORS)._replace(boosts=BOOSTS)
    assert check_traversal(boosted, traversal([5, 3], {6, 5, 3})) == ([], 2)
    ledger = Ledger({(READER, ALICE)})
    ledger.posted(4, BOB)
    ledger.posted(6, ALICE, boost_of=4)
    with ledger.deleting(4):
        pass
    seen = ledger.view()
    assert seen.delete_returned[6] == seen.delete_returned[4] and 6 in seen.delete_started
    later = traversal([6], began=ledger.now() + 1, ended=ledger.now() + 2)
    assert kinds(check_traversal(seen, later)) == ["deleted post shown"]


def test_the_boost_rule_leaves_out_a_boost_of_a_post_shown_below_it():
    assert boost_rule([6, 5, 4], BOOSTS, 40) == [5, 4]
    assert boost_rule([6, 5, 4], BOOSTS, 1) == [6, 5, 4]  # 4 is past the window
    assert boost_rule([7, 6, 5], {7: 4, 6: 4}, 40) == [6, 5]  # another boost of it below
    assert boost_rule([6, 5], BOOSTS, 40) == [6, 5]


def test_a_settled_list_and_a_home_with_the_tag_must_be_exact():
    settled = view(authors=AUTHORS, tagged={4}, following_tag=True)._replace(boosts=BOOSTS)
    assert expected_timeline(settled, READER) == [5, 4, 3, 2]  # Alice's boost of 4: left out
    assert expected_timeline(settled, READER, LIST) == [6, 5, 3]  # no 4 below it: shown
    assert check_settled(settled, READER, [(6, ALICE), (5, ALICE), (3, ALICE)], 0.0, "", LIST) == []
    found = check_settled(settled, READER, [(5, ALICE), (3, ALICE), (2, READER)], 0.0, "", LIST)
    assert found[0]["kind"] == "settled list wrong"
    assert found[0]["missing"] == [(6, ALICE)] and found[0]["unexpected"] == [(2, READER)]
    unfollowed = settled._replace(tag_follows={READER: [Change(1.0, 2.0, False)]})
    assert expected_timeline(unfollowed, READER) == [6, 5, 3, 2]
    found = check_settled(unfollowed, READER, [(5, ALICE), (4, BOB), (3, ALICE)], 0.0, "")
    assert found[0]["missing"] == [(6, ALICE), (2, READER)] and found[0]["unexpected"] == [(4, BOB)]
