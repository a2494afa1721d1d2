"""The writer: one thread making a seeded random sequence of changes under the readers.

Besides posts (some carrying the run's hashtag, some unlisted), boosts, deletes, follows and
the fan-out settings, it puts accounts on their follower's list and takes them off (an
unfollow takes them off too, as the service does) and follows and unfollows the tag.
Its choices depend only on its generator and on what it did itself, so a seed fixes the
sequence (how much of it fits in the time given depends on the machine). Every change goes
through the services the API and the operators' commands call, and is written to the ledger
with the moments it began and returned.
"""

from __future__ import annotations

import collections
import contextlib
import random
import time
import traceback

from loadtest.stress.ledger import Ledger
from socialapp.domain.fanout import LEANINGS, MODES, STRATEGIES
from socialapp.services import adaptive, boosts, graph, lists, operators, posts, tags

# How often each change is drawn. "reconcile race": an author's side changes (override,
# leaning or threshold), then their followers change while reconcile_author runs.
WEIGHTS = {
    "post": 30,
    "delete": 10,
    "follow": 9,
    "unfollow": 9,
    "mode": 7,
    "threshold": 7,
    "lean": 7,
    "override": 6,
    "reconcile race": 5,
    "boost": 6,
    "list add": 6,
    "list remove": 5,
    "tag": 5,
}
TAG = "x"  # the run's hashtag
TAGGED = 0.35  # of the posts, those carrying it
UNLISTED = 0.2  # of the posts, those unlisted (a tagged one is then not in the tag's feed)
BURST = (3, 6)  # follow/unfollow toggles after a side change, spread over...
BURST_GAP = (0.05, 0.35)  # ...these gaps in seconds: across reconcile_authors' settle delay
PACE = 0.03  # at most this long between two changes
ERRORS_KEPT = 5


class Writer:
    def __init__(
        self, components, ledger: Ledger, authors, readers, list_ids, seed: int, fault=None
    ):
        self.c = components
        self.ledger = ledger
        self.authors, self.readers = list(authors), list(readers)
        self.list_ids: dict[int, int] = dict(list_ids)  # reader -> their list
        self.users = self.authors + self.readers
        self.random = random.Random(f"writer:{seed}")
        self.fault = fault
        first = ledger.view()
        self.follows = set(first.initial)
        self.members = set(first.initial_members)  # (owner, account)
        self.tag_followers = set(first.initial_tags)
        self.live: dict[int, list[int]] = {user: [] for user in self.users}
        self.live_boosts: dict[int, tuple[int, int]] = {}  # live boost -> (booster, boosted post)
        self.done: collections.Counter[str] = collections.Counter()
        self.errors: list[dict] = []

    def run(self, seconds: float, most: int, started: float) -> None:
        """Changes until ``seconds`` have passed or ``most`` were made."""
        deadline = time.monotonic() + seconds
        kinds, weights = list(WEIGHTS), list(WEIGHTS.values())
        if self.fault == "phantom-delete":  # one at least, of a post its reader must see
            self._delete(self.readers[0])
        while time.monotonic() < deadline and self.done.total() < most:
            kind = self.random.choices(kinds, weights)[0]
            try:
                getattr(self, "_" + kind.replace(" ", "_"))()
                self.done[kind] += 1
            except Exception as error:  # every failure is a finding, not a reason to stop
                self.done["failed"] += 1
                if len(self.errors) < ERRORS_KEPT:
                    where = traceback.extract_tb(error.__traceback__)[-1]
                    self.errors.append(
                        {
                            "kind": "writer error",
                            "at": round(self.ledger.now() - started, 3),
                            "change": kind,
                            "error": repr(error),
                            "where": f"{where.filename}:{where.lineno}",
                        }
                    )
            time.sleep(self.random.uniform(0, PACE))

    def post(self, author: int) -> int:
        c = self.c
        tagged = self.random.random() < TAGGED
        visibility = "unlisted" if self.random.random() < UNLISTED else "public"
        text = f"stress #{TAG}" if tagged else "stress"
        post = posts.create_post(c.uow, c.fanout, c.ids, author, text, visibility=visibility)
        self.ledger.posted(post["_id"], author, tagged=tagged and visibility == "public")
        self.live[author].append(post["_id"])
        return post["_id"]

    def _boost(self) -> None:
        """Someone boosts another's live post (not a boost) they have not boosted yet."""
        booster = self.random.choice(self.users)
        done = {post for b, post in self.live_boosts.values() if b == booster}
        originals = [
            post
            for author, live in self.live.items()
            if author != booster
            for post in live
            if post not in self.live_boosts and post not in done
        ]
        if not originals:
            return self._post()
        original = self.random.choice(originals)
        made = boosts.boost(
            self.c.uow, self.c.fanout, self.c.post_cache, self.c.ids, original, booster
        )
        self.ledger.posted(made["_id"], booster, boost_of=original)
        self.live_boosts[made["_id"]] = (booster, original)
        self.live[booster].append(made["_id"])

    def _post(self) -> None:
        self.post(self.random.choice(self.users))

    def _delete(self, author: int | None = None) -> None:
        authors = [user for user in self.users if self.live[user]]
        if not authors:
            return self._post()
        author = author or self.random.choice(authors)
        victim = self.live[author].pop(self.random.randrange(len(self.live[author])))
        self.live_boosts.pop(victim, None)  # an unboost
        for boost, (booster, original) in list(self.live_boosts.items()):
            if original == victim:  # a task deletes its boosts
                del self.live_boosts[boost]
                self.live[booster].remove(boost)
        with self.ledger.deleting(victim):
            if self.fault != "phantom-delete":  # the fault: recorded, never sent
                posts.delete_post(
                    self.c.uow, self.c.fanout, self.c.post_cache, self.c.queue, victim, author
                )

    def _follow(self) -> None:
        reader = self.random.choice(self.readers)
        candidates = [u for u in self.users if u != reader and (reader, u) not in self.follows]
        if candidates:
            self.toggle(reader, self.random.choice(candidates))

    def _unfollow(self) -> None:
        reader = self.random.choice(self.readers)
        followees = sorted(a for r, a in self.follows if r == reader)
        if followees:
            self.toggle(reader, self.random.choice(followees))

    def toggle(self, follower: int, followee: int) -> None:
        """Follow ``followee`` if not yet, else unfollow (which takes them off the follower's
        list, in the same call)."""
        c, following = self.c, (follower, followee) not in self.follows
        change = graph.follow if following else graph.unfollow
        listed = not following and (follower, followee) in self.members
        with contextlib.ExitStack() as changes:
            changes.enter_context(self.ledger.changing(follower, followee, following))
            if listed:
                changes.enter_context(self.ledger.listing(follower, followee, False))
            change(c.uow, c.fanout, follower, followee)
        (self.follows.add if following else self.follows.discard)((follower, followee))
        self.members.discard((follower, followee))

    def _list_add(self) -> None:
        """A reader puts someone they follow on their list."""
        owner = self.random.choice(self.readers)
        candidates = sorted(
            a for r, a in self.follows if r == owner and (owner, a) not in self.members
        )
        if not candidates:
            return self._follow()
        member = self.random.choice(candidates)
        with self.ledger.listing(owner, member, True):
            lists.add_members(self.c.uow, self.c.fanout, owner, self.list_ids[owner], [member])
        self.members.add((owner, member))

    def _list_remove(self) -> None:
        """A reader takes someone off their list."""
        owner = self.random.choice(self.readers)
        listed = sorted(a for r, a in self.members if r == owner)
        if not listed:
            return self._list_add()
        member = self.random.choice(listed)
        with self.ledger.listing(owner, member, False):
            lists.remove_members(self.c.uow, self.c.fanout, owner, self.list_ids[owner], [member])
        self.members.discard((owner, member))

    def _tag(self) -> None:
        self.toggle_tag(self.random.choice(self.readers))

    def toggle_tag(self, reader: int) -> None:
        """Follow the tag if ``reader`` does not yet, else unfollow it."""
        c, following = self.c, reader not in self.tag_followers
        change = tags.follow if following else tags.unfollow
        with self.ledger.tagging(reader, following):
            change(c.tag_follows, reader, TAG, c.fanout.on_tag_follow_changed)
        (self.tag_followers.add if following else self.tag_followers.discard)(reader)

    def _mode(self) -> None:
        current = operators.describe_fanout(
            self.c.fanout_settings, self.c.author_copies, self.c.users
        )["mode"]
        mode = self.random.choice([m for m in MODES if m != current])
        threshold = self._threshold_value() if self.random.random() < 0.3 else None
        operators.change_fanout(
            self.c.fanout_settings, self.c.fanout, mode, celebrity_threshold=threshold
        )

    def _threshold(self, value: int | None = None) -> None:
        operators.change_fanout(
            self.c.fanout_settings,
            self.c.fanout,
            celebrity_threshold=value or self._threshold_value(),
        )

    def _threshold_value(self) -> int:
        return self.random.randint(1, len(self.readers) + 1)

    def _lean(self, author: int | None = None) -> None:
        """Adaptive mode's decisions for the author and up to two others, reconciled together
        as a round's are."""
        authors = {author or self.random.choice(self.users)}
        authors |= set(self.random.sample(self.users, self.random.randint(0, 2)))
        decisions = {chosen: self.random.choice(LEANINGS) for chosen in sorted(authors)}
        adaptive.lean(self.c.users, self.c.adaptive_rounds, self.c.fanout, decisions, time.time())

    def _override(self, author: int | None = None) -> None:
        c, author = self.c, author or self.random.choice(self.users)
        strategy = self.random.choice(STRATEGIES)
        operators.set_author_strategy(c.users, c.fanout, author, strategy)

    def _reconcile_race(self) -> None:
        """Move an author to the other side, then change their followers while the author is
        reconciled: the threshold is put at their count, so each toggle crosses it too."""
        author = self.random.choice(self.users)
        side = self.random.choice(("override", "lean", "threshold"))
        if side == "threshold":
            followers = sum(1 for _, followee in self.follows if followee == author)
            self._threshold(max(1, followers + self.random.choice((0, 1))))
        else:
            getattr(self, "_" + side)(author)
        followers = [reader for reader in self.readers if reader != author]
        for _ in range(self.random.randint(*BURST)):
            time.sleep(self.random.uniform(*BURST_GAP))
            self.toggle(self.random.choice(followers), author)
            self.done["burst toggle"] += 1
