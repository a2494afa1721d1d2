"""Who is pushed and who is pulled.

An author's posts reach a reader either *pushed* (copied into the reader's home timeline when
posted) or *pulled* (merged from the author's outbox when the reader asks). The rule depends
on the global mode and celebrity threshold, and in hybrid mode on per-author overrides.

Switching is made safe by keeping, next to the current config, every config still *pending*
reconciliation. While a config is pending, delivery pushes an author if ANY config pushes
them and readers pull an author if ANY config pulls them: each side does a superset of the
work, so a reader never misses a post that one config would have pushed and the other pulled.
"""

from __future__ import annotations

import dataclasses

MODES = ("write", "read", "hybrid")
STRATEGIES = ("push", "pull", "auto")


@dataclasses.dataclass(frozen=True)
class FanoutConfig:
    mode: str = "hybrid"
    celebrity_threshold: int = 10_000

    def pushes(self, followers: int, override: str = "auto") -> bool:
        if self.mode == "write":
            return True
        if self.mode == "read":
            return False
        if override in ("push", "pull"):
            return override == "push"
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

    def delivery_pushes(self, followers: int, override: str = "auto") -> bool:
        """Whether a new post by this author is copied into followers' home timelines."""
        return any(config.pushes(followers, override) for config in self.configs)

    def reader_pulls(self, followers: int, override: str = "auto", unsettled=False) -> bool:
        """Whether readers merge this author's outbox at read time."""
        return unsettled or any(not config.pushes(followers, override) for config in self.configs)

    def pulled_when_settled(self, followers: int, override: str = "auto") -> bool | None:
        """Whether followers keep the author in their pulled sets once this config settles;
        None in ``read`` mode, where reads pull every followee and the sets are not used."""
        if self.current.mode == "read":
            return None
        return not self.current.pushes(followers, override)

    def held_by_pulled_sets(self, followers: int, override: str = "auto") -> bool:
        """Whether a new follower's pulled set takes the author: some config other than
        ``read`` pulls them (``read`` pulls everyone without the sets)."""
        return any(
            not config.pushes(followers, override)
            for config in self.configs
            if config.mode != "read"
        )

    def needs_backfill(self, followers: int, override: str = "auto") -> bool:
        """Pushed now but pulled by a pending config: followers' timelines lack their posts."""
        return self.current.pushes(followers, override) and any(
            not config.pushes(followers, override) for config in self.pending
        )

    def crosses_to_push(self, before: int, after: int, override: str = "auto") -> bool:
        """Whether a change of follower count moves the author from pulled to pushed."""
        return any(
            not config.pushes(before, override) and config.pushes(after, override)
            for config in self.configs
        )
