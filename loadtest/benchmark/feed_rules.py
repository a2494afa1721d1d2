"""What blocks, mutes and boosts cost a page (docs/feed-rules.md): readers who block or mute
``hidden_accounts`` accounts and whose homes are half boosts, against readers who hide
nobody with the same homes, read alternately on one server, in write and hybrid mode.

Every followed author posts and boosts a post of a stranger's in turn, so half of each home
is boosts; a few strangers are among the hidden accounts, so the page leaves some boosts
out and reads on, as a real reader's does.
"""

from __future__ import annotations

from loadtest.benchmark import reads, seed
from socialapp.services import boosts, operators, posts

MODES = ("write", "hybrid")
HIDDEN_STRANGERS = 2  # strangers among the hidden accounts: their boosted posts drop out


def setup(world, size) -> dict[str, list[int]]:
    """Plain and filtered readers following the same authors; the tokens of both."""
    c = world.c
    followees = seed.authors(c, size.rules_followees, "booster")
    strangers = seed.authors(c, size.rules_followees, "stranger")
    for n in range(size.posts_per_author_read):
        for author_id, stranger in zip(followees, strangers, strict=True):
            original = posts.create_post(c.uow, c.fanout, c.ids, stranger, f"stranger {n}")
            posts.create_post(c.uow, c.fanout, c.ids, author_id, f"post {n}")
            boosts.boost(c.uow, c.fanout, c.post_cache, c.ids, original["_id"], author_id)
    world.settle()
    groups = {"plain": seed.new_ids(c, size.readers), "filtered": seed.new_ids(c, size.readers)}
    edges = [(r, a) for ids in groups.values() for r in ids for a in followees]
    seed.follow_all(c, edges)
    seed.load_followees(c, edges)
    hidden = seed.new_ids(c, size.hidden_accounts - HIDDEN_STRANGERS) + strangers[:2]
    for reader in groups["filtered"]:
        for n, account in enumerate(hidden):  # half blocked, half muted
            if n % 2:
                c.filters.block(reader, account)
            else:
                c.filters.mute(reader, account, None)
    return {name: [c.tokens.issue(r) for r in ids] for name, ids in groups.items()}


def measure(world, size, tokens: dict[str, list[str]]) -> dict:
    """Per mode: filtered p50 / plain p50, the median of alternating pairs."""
    c, found = world.c, {}
    for mode in MODES:
        operators.change_fanout(c.fanout_settings, c.fanout, mode=mode)
        world.settle()
        with reads.Server(world.app) as server:
            plain, filtered = (
                (reads.HOME, [reads.bearer(t) for t in tokens[name]])
                for name in ("plain", "filtered")
            )
            reads.load(server.port, *plain, size.connections, size.read_seconds / 4)  # warm
            reads.load(server.port, *filtered, size.connections, size.read_seconds / 4)
            found[mode] = reads.alternating(server.port, plain, filtered, size, "p50_ms")
    return {
        "hidden_accounts": size.hidden_accounts,
        "followees": size.rules_followees,
        "boost_share": 0.5,
        "filtered_vs_plain": found,
    }
