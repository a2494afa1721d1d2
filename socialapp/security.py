"""Password hashing (Argon2id) and signed, expiring bearer tokens (JWT, HS256 pinned)."""

from __future__ import annotations

import functools
import os
import threading
import time

import argon2
import jwt

from socialapp.config import Settings

TOKEN_ALGORITHM = "HS256"
TOKEN_ISSUER = "socialapp"
VERIFIED_TOKENS = 4096  # signatures checked once per process, while the token is in this LRU


class InvalidToken(Exception):
    """The token is missing, malformed, expired or forged."""


class Passwords:
    """Argon2id hashing, at most ``slots`` hashes at once (default: one core fewer than the
    machine has, at least one).

    Each hash holds ``argon2_memory_kib`` (19 MiB by default, OWASP's recommendation) and a
    core for ~0.02 s: a burst of sign-ins on more request threads than cores would only make
    every hash slower (they evict each other's memory) and multiply the memory held, and with
    a hash on every core every other request waits for one (on two cores, a newcomers' burst
    of sign-ups put posts, likes and follows past 50 ms). Extra ones wait their turn. Hashes
    made with other parameters (earlier versions used 64 MiB and 3 passes) verify as they
    are: the parameters are part of the hash.
    """

    def __init__(self, settings: Settings, slots: int | None = None) -> None:
        self._hasher = argon2.PasswordHasher(
            time_cost=settings.argon2_time_cost,
            memory_cost=settings.argon2_memory_kib,
            parallelism=settings.argon2_parallelism,
        )
        self._slots = threading.BoundedSemaphore(slots or max(1, (os.cpu_count() or 1) - 1))
        # Verified against when the handle is unknown, so both paths cost the same.
        self._decoy = self._hasher.hash("decoy password")

    def hash(self, password: str) -> str:
        with self._slots:
            return self._hasher.hash(password)

    def verify(self, password_hash: str | None, password: str) -> bool:
        try:
            with self._slots:
                verified = self._hasher.verify(password_hash or self._decoy, password)
            return verified and bool(password_hash)
        except (argon2.exceptions.VerificationError, argon2.exceptions.InvalidHashError):
            return False


class Tokens:
    def __init__(self, settings: Settings, clock=time.time) -> None:
        self._key = settings.secret_key
        self.ttl = settings.token_ttl_seconds
        self._clock = clock
        self._verified = functools.lru_cache(maxsize=VERIFIED_TOKENS)(self._decode)

    def issue(self, user_id: int) -> str:
        now = int(self._clock())
        claims = {"sub": str(user_id), "iat": now, "exp": now + self.ttl, "iss": TOKEN_ISSUER}
        return jwt.encode(claims, self._key, algorithm=TOKEN_ALGORITHM)

    def user_id(self, token: str) -> int:
        """The user a valid token speaks for; ``InvalidToken`` otherwise.

        A token's claims depend only on its text, so its signature is checked once and the
        claims kept (a page read is a few hundred microseconds; the HMAC and JSON decode were
        a tenth of it). Expiry is still checked on every call, as PyJWT checks it.
        """
        user_id, expires_at = self._verified(token)
        if expires_at <= time.time():
            raise InvalidToken("Signature has expired")
        return user_id

    def expires_at(self, token: str) -> int:
        """When a valid token ends (unix time); ``InvalidToken`` for an invalid one."""
        return self._verified(token)[1]

    def _decode(self, token: str) -> tuple[int, int]:
        try:
            claims = jwt.decode(
                token,
                self._key,
                algorithms=[TOKEN_ALGORITHM],
                issuer=TOKEN_ISSUER,
                options={"require": ["sub", "exp", "iat", "iss"]},
            )
            return int(claims["sub"]), claims["exp"]
        except (jwt.InvalidTokenError, ValueError) as error:
            raise InvalidToken(str(error)) from error
