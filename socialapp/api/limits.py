"""Rate limits (flask-limiter, moving windows kept in Redis under ``ratelimit:``).

Writes are limited per caller and per client address, sign-ups per address, token requests
per address and per target handle. Every token request counts, successful or not: a hit is
taken atomically before the password is checked, so concurrent guesses cannot overrun the
limit (counting failures only would test first and deduct after the response, which a
burst of parallel guesses slips through). If Redis cannot be reached, each process falls
back to the same limits in memory and checks Redis again with back-off (logged, and shown by
``/readyz``); no request fails because of the limiter. flask-limiter takes any error raised
while checking a request for a dead storage, so the key functions here never raise: a
request's content can never switch the process to fresh counters. There is one limiter per
process (flask-limiter's pattern for app factories): the app created last names its storage.
"""

from __future__ import annotations

import functools
import hashlib
import math
import time

from flask import Flask, current_app, request
from flask_limiter import Limiter, RateLimitExceeded
from limits import parse_many
from redis.backoff import NoBackoff
from redis.retry import Retry

from socialapp.api import auth
from socialapp.config import PREFIX, ConfigError, Settings
from socialapp.errors import Forbidden, Invalid, Unauthorized

KEY_PREFIX = "ratelimit"
STORAGE_TIMEOUT = 1.0
RULES = (
    "rate_limit_writes",
    "rate_limit_writes_per_address",
    "rate_limit_signups",
    "rate_limit_tokens",
    "rate_limit_tokens_per_address",
)


def never_raises(key_func):
    """``key_func``, or a key shared by every request it could not name (logged)."""

    @functools.wraps(key_func)
    def key() -> str:
        try:
            return key_func()
        except Exception:
            current_app.logger.exception("rate limit key %s failed", key_func.__name__)
            return f"unnamed:{key_func.__name__}"

    return key


@never_raises
def address_key() -> str:
    """The client address (``request.remote_addr``; behind proxies see ``trusted_proxies``)."""
    return f"address:{request.remote_addr or 'unknown'}"


@never_raises
def caller_key() -> str:
    """The caller named by a valid bearer token, else the client address."""
    try:
        return f"user:{auth.caller_id()}"
    # Forbidden: a token whose scopes refuse the request; Invalid: an app token
    except (Unauthorized, Forbidden, Invalid):
        return address_key()


def _handle() -> str | None:
    """The handle a token request names: ``handle`` on /v1, ``username`` on /oauth/token
    (a form or JSON body), so both APIs share one budget per handle."""
    body = request.get_json(silent=True)
    body = body if isinstance(body, dict) else request.form
    handle = body.get("handle", body.get("username"))
    return handle.lower() if isinstance(handle, str) and handle else None


@never_raises
def handle_key() -> str:
    """The target handle of a token request, lower-cased and hashed into a bounded key."""
    raw = (_handle() or "").encode("utf-8", "surrogatepass")
    return f"handle:{hashlib.blake2b(raw, digest_size=16).hexdigest()}"


def _no_handle() -> bool:
    try:
        return _handle() is None
    except Exception:  # counted under the shared "unnamed" handle key instead
        current_app.logger.exception("rate limit: cannot read the handle")
        return False


def _settings() -> Settings:
    return current_app.extensions["rate_limits"]


def _setting(name: str):
    return lambda: getattr(_settings(), name)


limiter = Limiter(
    key_func=address_key,
    strategy="moving-window",
    swallow_errors=True,
    in_memory_fallback_enabled=True,
    headers_enabled=False,
)


@limiter.request_filter
def _disabled() -> bool:
    return not _settings().rate_limits_enabled


def _stack(*limits):
    def decorate(view):
        for limit in limits:
            view = limit(view)
        return view

    return decorate


writes = _stack(
    limiter.shared_limit(_setting("rate_limit_writes"), scope="writes", key_func=caller_key),
    limiter.shared_limit(
        _setting("rate_limit_writes_per_address"), scope="writes-address", key_func=address_key
    ),
)
signups = limiter.shared_limit(_setting("rate_limit_signups"), scope="signups")
tokens = _stack(
    limiter.shared_limit(
        _setting("rate_limit_tokens"),
        scope="tokens-handle",
        key_func=handle_key,
        exempt_when=_no_handle,
    ),
    limiter.shared_limit(_setting("rate_limit_tokens_per_address"), scope="tokens-address"),
)


def storage_state() -> str:
    """``ok``, or ``unavailable`` while the limits are kept in this process's memory."""
    return "unavailable" if limiter._storage_dead else "ok"


def storage_uri(settings: Settings) -> str:
    """The timelines' Redis in the form the ``limits`` library reads."""
    if settings.redis_cluster:
        return "redis+cluster://" + settings.redis_url.split("://", 1)[1].split("/", 1)[0]
    return settings.redis_url


def init_app(app: Flask, api, settings: Settings) -> None:
    """Keep this app's counters in its Redis; render 429 like every other error."""
    check_rules(settings)
    app.extensions["rate_limits"] = settings
    options = dict(
        key_prefix=KEY_PREFIX,
        socket_timeout=STORAGE_TIMEOUT,
        socket_connect_timeout=STORAGE_TIMEOUT,
        retry=Retry(NoBackoff(), 1),
    )
    if settings.redis_url.startswith("rediss://") and settings.redis_cluster:
        options["ssl"] = True
    app.config.update(
        RATELIMIT_STORAGE_URI=storage_uri(settings), RATELIMIT_STORAGE_OPTIONS=options
    )
    limiter.init_app(app)
    limiter._storage_dead = False  # kept across init_app by flask-limiter; a new storage is alive

    @app.errorhandler(RateLimitExceeded)
    def too_many_requests(error: RateLimitExceeded):
        error.data = {
            "message": f"rate limit exceeded ({error.description}), retry later",
            "headers": {"Retry-After": str(retry_after(error))},
        }
        return api.handle_http_exception(error)


def retry_after(error: RateLimitExceeded) -> int:
    """Whole seconds until the breached window frees a slot."""
    try:
        reset_at = limiter.current_limit.window.reset_time
    except Exception:  # the window cannot be read: the whole window is a safe answer
        current_app.logger.warning("cannot read the breached rate limit's window")
        return error.limit.limit.get_expiry()
    return max(1, math.ceil(reset_at - time.time()))


def check_rules(settings: Settings) -> None:
    """A rule that does not parse would silently limit nothing: refuse to start instead."""
    for name in RULES:
        try:
            parse_many(getattr(settings, name))
        except ValueError as error:
            raise ConfigError(f"{PREFIX}{name.upper()}: {error}") from error
