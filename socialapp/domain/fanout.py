"""Who is pushed and who is pulled.

An author's posts reach a reader either *pushed* (copied into the reader's home timeline when
posted) or *pulled* (merged from the author's outbox when the reader asks). The rule depends
on the global mode and celebrity threshold, and in hybrid and adaptive modes on the author's
*strategy*: an operator's override (``push``, ``pull``), else ``auto``, which in adaptive mode
carries the author's measured leaning (``auto-push``, ``auto-pull``; see
``socialapp.domain.adaptive``). An author adaptive mode has not measured yet is treated as in
hybrid mode, by the threshold.

Switching is made safe by keeping, next to the current config, every config still *pending*
reconciliation. While a config is pending, delivery pushes an author if ANY config pushes
them and readers pull an author if ANY config pulls them: each side does a superset of the
work, so a reader never misses a post that one config would have pushed and the other pulled.
"""

from __future__ import annotations

import dataclasses
import functools

MODES = ("write", "read", "hybrid", "adaptive")
STRATEGIES = ("push", "pull", "auto")  # what an operator sets per author
LEANINGS = ("push", "pull")  # what adaptive mode decided for an author


def author_strategy(override: str | None, leaning: str | None) -> str:
    """The per-author input of ``FanoutConfig.pushes``: the operator's override, else
    ``auto``, carrying adaptive mode's leaning when it has one."""
    override = override or "auto"
    if override != "auto" or leaning not in LEANINGS:
        return override
    return f"auto-{leaning}"


def strategy_of(user: dict) -> str:
    """The strategy of a ``users`` document (``fanout_override``, ``fanout_leaning``)."""
    return author_strategy(user.get("fanout_override"), user.get("fanout_leaning"))


@dataclasses.dataclass(frozen=True)
class FanoutConfig:
    mode: str = "hybrid"
    celebrity_threshold: int = 10_000

    def pushes(self, followers: int, strategy: str = "auto") -> bool:
        if self.mode == "write":
            return True
        if self.mode == "read":
            return False
        if strategy in ("push", "pull"):
            return strategy == "push"
        if self.mode == "adaptive" and strategy in ("auto-push", "auto-pull"):
            return strategy == "auto-push"
        return followers < self.celebrity_threshold


@dataclasses.dataclass(frozen=True)
class FanoutSettings:
    current: FanoutConfig = FanoutConfig()
    pending: tuple[FanoutConfig, ...] = ()
    generation: int = 0

    @property
    def configs(self) -> tuple[FanoutConfig, ...]:
        return (self.current, *self.pending)

    @property
    def settled(self) -> bool:
        return not self.pending

    @functools.cached_property  # asked by every page read of settings that rarely change
    def pulls_everyone(self) -> bool:
        """Whether readers pull every followee (``read`` mode in force or pending): pages
        merge every outbox, and streams follow every followee."""
        return any(config.mode == "read" for config in self.configs)

    @functools.cached_property  # asked by every page read, as ``pulls_everyone``
    def measures_rates(self) -> bool:
        """Whether reads and posts are counted: adaptive mode is in force or pending."""
        return any(config.mode == "adaptive" for config in self.configs)

    def delivery_pushes(self, followers: int, strategy: str = "auto") -> bool:
        """Whether a new post by this author is copied into followers' home timelines."""
        return any(config.pushes(followers, strategy) for config in self.configs)

    def reader_pulls(self, followers: int, strategy: str = "auto", unsettled=False) -> bool:
        """Whether readers merge this author's outbox at read time."""
        return unsettled or any(not config.pushes(followers, strategy) for config in self.configs)

    def pulled_when_settled(self, followers: int, strategy: str = "auto") -> bool | None:
        """Whether followers keep the author in their pulled sets once this config settles;
        None in ``read`` mode, where reads pull every followee and the sets are not used."""
        if self.current.mode == "read":
            return None
        return not self.current.pushes(followers, strategy)

    def held_by_pulled_sets(self, followers: int, strategy: str = "auto") -> bool:
        """Whether a new follower's pulled set takes the author: some config other than
        ``read`` pulls them (``read`` pulls everyone without the sets)."""
        return any(
            not config.pushes(followers, strategy)
            for config in self.configs
            if config.mode != "read"
        )

    def needs_backfill(self, followers: int, strategy: str = "auto") -> bool:
        """Pushed now but pulled by a pending config: followers' timelines lack their posts."""
        return self.current.pushes(followers, strategy) and any(
            not config.pushes(followers, strategy) for config in self.pending
        )

    # A followed hashtag is an author without overrides or measured rates: pushed to its
    # followers' tagged sets while its follower count is under the threshold, pulled from
    # its shared feed at read time at or above it (in adaptive mode too, as an author not
    # measured yet), pushed in ``write`` mode and pulled in ``read`` mode. A tag not counted
    # (``followers`` None) or being reconciled is both, as an unsettled author is.

    @functools.cached_property  # asked by every home page of a reader who follows hashtags
    def tag_pull_at(self) -> int | None:
        """The fewest followers at which some config pulls a followed hashtag (None: none
        does, every config is ``write``): ``pulls_tag``'s threshold, which the home's page
        script applies to the counts it reads."""
        pulling = [c for c in self.configs if c.mode != "write"]
        return min(
            (0 if c.mode == "read" else c.celebrity_threshold for c in pulling), default=None
        )

    def pushes_tag(self, followers: int | None, unsettled: bool = False) -> bool:
        """Whether a new post with the tag is copied into its followers' tagged sets."""
        return unsettled or followers is None or self.delivery_pushes(followers)

    def pulls_tag(self, followers: int | None, unsettled: bool = False) -> bool:
        """Whether pages read the tag's shared feed (its followers' tagged sets may lack
        some of its posts)."""
        at = self.tag_pull_at
        return followers is None or unsettled or (at is not None and followers >= at)

    def tag_moves(self, before: int | None, after: int) -> bool:
        """Whether a change of a tag's follower count moves it between pushed and pulled
        in some config (a count not kept before moves it)."""
        return before is None or any(
            config.pushes(before) != config.pushes(after) for config in self.configs
        )

    def crosses_to_push(self, before: int, after: int, strategy: str = "auto") -> bool:
        """Whether a change of follower count moves the author from pulled to pushed."""
        return any(
            not config.pushes(before, strategy) and config.pushes(after, strategy)
            for config in self.configs
        )
