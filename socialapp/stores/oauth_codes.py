"""Authorization codes in Redis: the only owner of the ``oauth:code:*`` keys.

A code is kept under the SHA-256 of itself (a Redis dump holds nothing a client could
redeem), as a hash: ``grant`` (JSON: app, account, redirect URI, scopes, PKCE challenge)
and, once redeemed, ``used`` (the SHA-256 of the token it bought, or ``-`` while none yet).
The key expires with the code. Redeeming is one atomic script: the first caller gets the
grant, every later one gets what the first redemption issued, so a replayed code is refused
and its token can be revoked.
"""

from __future__ import annotations

import json

from socialapp.stores.unavailable import REDIS, translates

PREFIX = "oauth:code:"
UNUSED = "-"

CLAIM = """
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local first = redis.call('HSETNX', KEYS[1], 'used', ARGV[1])
return {first, redis.call('HGET', KEYS[1], 'grant'), redis.call('HGET', KEYS[1], 'used')}
"""
SAVE = """
redis.call('HSET', KEYS[1], 'grant', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
"""
MARK = """
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'used', ARGV[1]) end
"""


@translates(REDIS)
class OAuthCodes:
    def __init__(self, client) -> None:
        self._claim = client.register_script(CLAIM)
        self._save = client.register_script(SAVE)
        self._mark = client.register_script(MARK)

    def save(self, code_hash: str, grant: dict, ttl_seconds: int) -> None:
        self._save(keys=[PREFIX + code_hash], args=[json.dumps(grant), ttl_seconds])

    def claim(self, code_hash: str) -> tuple[dict | None, str | None]:
        """``(grant, None)`` for the first redemption of a live code; ``(grant, used)`` for
        a replay (``used``: the hash of the token the first one issued, or ``-``);
        ``(None, None)`` for an unknown or expired code."""
        found = self._claim(keys=[PREFIX + code_hash], args=[UNUSED])
        if not found:
            return None, None
        first, grant, used = found
        grant = json.loads(grant) if grant else None
        return (grant, None) if first == 1 else (grant, _text(used))

    def mark_issued(self, code_hash: str, token_hash: str) -> None:
        """Remember the token the code bought, for revoking it if the code comes back."""
        self._mark(keys=[PREFIX + code_hash], args=[token_hash])


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
