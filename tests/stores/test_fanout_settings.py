"""The ``settings`` collection's contract (``FanoutSettingsStore``), on every backend."""

from __future__ import annotations

import pytest

from socialapp.domain.fanout import FanoutConfig, FanoutSettings
from socialapp.stores.fanout_settings import FanoutSettingsStore


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class TestFanoutSettingsStore:
    @pytest.fixture
    def clock(self) -> Clock:
        return Clock()

    @pytest.fixture
    def store(self, db, settings, clock) -> FanoutSettingsStore:
        store = FanoutSettingsStore(db, settings, clock=clock)
        store.ensure_indexes()
        return store

    def test_nothing_stored_reads_the_defaults(self, store):
        assert store.read() == FanoutSettings()

    def test_a_change_keeps_the_replaced_config_pending_until_settled(self, store):
        first = store.change(mode="write")
        second = store.change(threshold=50)

        assert first.generation == 1 and first.pending == (FanoutConfig(),)
        assert second.current == FanoutConfig("write", 50) and second.generation == 2
        assert store.read() == second
        assert store.settle(1) is False  # an older generation may not clear the newer one
        assert store.settle(2) is True
        assert store.read() == FanoutSettings(FanoutConfig("write", 50), (), 2)

    def test_a_change_to_the_same_config_writes_nothing(self, store):
        assert store.change(mode="hybrid") == FanoutSettings()
        assert store.read().generation == 0

    def test_changes_from_two_processes_stack_up(self, store, db, settings):
        other = FanoutSettingsStore(db, settings)
        store.change(mode="read")
        assert other.change(mode="write").generation == 2
        assert store.read().pending == (FanoutConfig(), FanoutConfig("read"))

    def test_current_is_cached_for_the_refresh_interval(self, store, db, settings, clock):
        assert store.current().current.mode == "hybrid"
        FanoutSettingsStore(db, settings).change(mode="read")
        assert store.current().current.mode == "hybrid"
        clock.now += settings.settings_refresh_seconds
        assert store.current().current.mode == "read"
