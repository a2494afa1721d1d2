"""Plain-Python rules of the feed: ids, fan-out policy, timeline merging. No I/O."""
