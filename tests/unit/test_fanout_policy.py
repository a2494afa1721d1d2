"""Who is pushed and who is pulled, under one config and while configs are pending."""

from __future__ import annotations

from socialapp.domain.fanout import FanoutConfig, FanoutSettings

HYBRID = FanoutConfig("hybrid", celebrity_threshold=100)


def test_each_mode_decides_alone():
    assert FanoutConfig("write").pushes(10**6, "pull") is True
    assert FanoutConfig("read").pushes(0, "push") is False
    assert HYBRID.pushes(99) is True and HYBRID.pushes(100) is False


def test_overrides_count_in_hybrid_mode_only():
    assert HYBRID.pushes(10**6, "push") is True
    assert HYBRID.pushes(0, "pull") is False
    assert HYBRID.pushes(0, "auto") is True


def test_while_a_switch_is_pending_both_sides_do_the_superset():
    switching = FanoutSettings(FanoutConfig("read"), pending=(FanoutConfig("write"),))
    assert not switching.settled
    assert switching.delivery_pushes(5) is True  # the pending config pushes
    assert switching.reader_pulls(5) is True  # the current one pulls
    assert switching.needs_backfill(5) is False

    settled = FanoutSettings(FanoutConfig("read"))
    assert settled.settled and settled.delivery_pushes(5) is False


def test_an_author_pushed_now_but_pulled_before_needs_a_backfill():
    lowered = FanoutSettings(
        FanoutConfig("hybrid", celebrity_threshold=1000), pending=(HYBRID,), generation=2
    )
    assert lowered.needs_backfill(500) is True
    assert lowered.needs_backfill(50) is False  # pushed by both
    assert lowered.needs_backfill(5000) is False  # pulled by both


def test_an_unsettled_author_is_pulled_by_readers_whatever_the_config():
    settings = FanoutSettings(FanoutConfig("write"))
    assert settings.reader_pulls(5) is False
    assert settings.reader_pulls(5, unsettled=True) is True


def test_falling_below_the_threshold_moves_an_author_to_push():
    settings = FanoutSettings(HYBRID)
    assert settings.crosses_to_push(before=100, after=99) is True
    assert settings.crosses_to_push(before=99, after=100) is False
    assert settings.crosses_to_push(before=100, after=99, strategy="pull") is False


def test_a_followed_tag_is_pushed_or_pulled_as_an_unmeasured_author():
    """A tag under the threshold is pushed, at or above it pulled (adaptive as hybrid: a tag
    has no measured rates); one not counted or being reconciled is both; a pending switch
    makes each side do the superset, as for authors."""
    hybrid, adaptive = FanoutSettings(HYBRID), FanoutSettings(FanoutConfig("adaptive", 100))
    for policy in (hybrid, adaptive):
        assert policy.pushes_tag(99) and not policy.pulls_tag(99)
        assert not policy.pushes_tag(100) and policy.pulls_tag(100)
        assert policy.pushes_tag(100, unsettled=True) and policy.pulls_tag(99, unsettled=True)
        assert policy.pushes_tag(None) and policy.pulls_tag(None)
    write, read = FanoutSettings(FanoutConfig("write")), FanoutSettings(FanoutConfig("read"))
    assert write.pushes_tag(10**6) and not write.pulls_tag(10**6)
    assert not read.pushes_tag(0) and read.pulls_tag(0)
    switching = FanoutSettings(HYBRID, pending=(FanoutConfig("write"),))
    assert switching.pushes_tag(100) and switching.pulls_tag(100)
    assert hybrid.tag_moves(99, 100) and hybrid.tag_moves(None, 5)
    assert not hybrid.tag_moves(5, 6) and not write.tag_moves(5, 10**6)


def test_a_tags_pull_threshold_is_the_unmeasured_authors_rule_in_every_config():
    """``tag_pull_at`` (what the home's page script compares the counts it reads with)
    pulls a counted, settled tag exactly where an author without overrides or measured
    rates is pulled, through every pair of a config in force and one pending."""
    configs = [
        FanoutConfig(mode, at)
        for mode in ("write", "read", "hybrid", "adaptive")
        for at in (1, 100)
    ]
    for current in configs:
        for pending in [(), *((config,) for config in configs)]:
            policy = FanoutSettings(current, pending)
            for followers in (0, 1, 99, 100, 10**6):
                assert policy.pulls_tag(followers) == policy.reader_pulls(followers)
    assert FanoutSettings(FanoutConfig("write")).tag_pull_at is None
    assert FanoutSettings(HYBRID, (FanoutConfig("read"),)).tag_pull_at == 0
