"""Settings read from the environment (prefix ``SOCIALAPP_``), with safe embedded defaults."""

from __future__ import annotations

import dataclasses
import math
import os
import secrets
from collections.abc import Mapping

from socialapp.domain.handles import RULE, is_handle

PREFIX = "SOCIALAPP_"
KEPT_EMPTY = ("data_dir",)  # settings an empty value turns off, rather than leaving unset
# The signing key when SOCIALAPP_SECRET_KEY is unset: drawn once per process (forked
# processes share it), unless ``socialapp serve`` uses the one its data directory keeps.
PROCESS_KEY = secrets.token_urlsafe(48)
EMBEDDED_CLUSTER_MASTERS = 3  # the size SOCIALAPP_EMBEDDED_REDIS_CLUSTER may ask for
TASK_SERIALIZERS = ("msgpack", "json")  # what workers accept, SOCIALAPP_TASK_SERIALIZER's choices


class ConfigError(RuntimeError):
    """The environment asks for something the service cannot run with."""


@dataclasses.dataclass(frozen=True)
class Settings:
    # Deployment
    env: str = "development"  # "production" refuses insecure defaults
    host: str = "127.0.0.1"
    port: int = 8000
    secret_key: str = ""  # signs tokens; unset: the data dir's (serve), else PROCESS_KEY
    cors_origins: str = ""  # comma separated; empty disables CORS
    # MongoDB: no URI means the embedded mongomock store inside this process
    mongo_uri: str = ""
    mongo_db: str = "socialapp"
    mongo_max_pool_size: int = 50
    mongo_timeout_ms: int = 5000
    mongo_majority_writes: bool = True  # majority write concern for edges and posts
    # The embedded store's and redis-server's data between runs; empty: in memory only
    data_dir: str = "var/data"  # under the working directory: the repository's for `make run`
    # Redis: no URL means a redis-server started by the service itself
    redis_url: str = ""
    redis_cluster: bool = False  # SOCIALAPP_REDIS_URL names a node of a Redis Cluster
    # `serve` with no REDIS_URL: the timelines on a Redis Cluster of this many masters (3),
    # one replica each, started by the service itself; 0: one redis-server
    embedded_redis_cluster: int = 0
    broker_url: str = ""  # empty: database 1 of REDIS_URL (not on a cluster: see checked)
    broker_visibility_timeout: int = 300  # a task unacknowledged this long is redelivered
    # How tasks are sent ("msgpack" or "json"; workers accept both): "json" while workers
    # from before msgpack still run, which accept nothing else (a rolling upgrade)
    task_serializer: str = "msgpack"
    # Accounts and tokens
    token_ttl_seconds: int = 3600
    # Argon2id at OWASP's recommendation (Password Storage Cheat Sheet): 19 MiB, 2 passes,
    # 1 lane, about 0.02 s of CPU a hash; RFC 9106's 64 MiB and 3 passes took 0.2 s, and a
    # burst of sign-ins held both cores of a small machine (issue 27).
    argon2_time_cost: int = 2
    argon2_memory_kib: int = 19456
    argon2_parallelism: int = 1
    operator_handle: str = ""
    operator_password: str = ""
    oauth_password_grant: bool = True  # /oauth/token's password grant, for scripts and tests
    # Posts and comments (outlier pattern)
    embedded_comments: int = 20
    comment_bucket_size: int = 100
    # Timelines and fan-out
    timeline_cap: int = 800
    outbox_cap: int = 800
    public_feed_cap: int = 800  # entries of the public feed in Redis (MongoDB past them)
    tag_feed_cap: int = 400  # entries of each hashtag's feed in Redis
    notifications_kept: int = 500  # each account's newest notifications kept, older trimmed
    # A boost is left out of a home when its post shows among the entries below it (Mastodon: 40)
    boost_window: int = 40
    fanout_chunk_size: int = 1000
    fanout_celebrity_chunk_size: int = 5000
    inactive_after_seconds: int = 30 * 24 * 3600
    settings_refresh_seconds: float = 2.0
    sweep_interval_seconds: float = 30.0  # how often a sweeper looks for stuck work
    sweep_after_seconds: float = 60.0  # a fan-out or notification event pending this long: again
    # Adaptive mode (socialapp.domain.adaptive): measured rates decide push or pull per author
    adaptive_cost_ratio: float = 3.0  # H/L, one push delivery over one pull: `make workload`
    adaptive_hysteresis: float = 0.5  # flip once the side in force costs 1.5x the other
    adaptive_rate_window_seconds: float = 3600.0  # rates decay by e over this time
    adaptive_interval_seconds: float = 60.0  # one round of decisions per interval
    adaptive_max_backoff: int = 8  # rounds that change nothing come up to N intervals apart
    adaptive_authors_per_round: int = 1000  # authors who posted that a round looks at
    adaptive_revisits_per_round: int = 100  # other authors a round looks at, in turn
    adaptive_changes_per_round: int = 100  # decisions a round may change
    adaptive_min_dwell_seconds: float = 600.0  # an author's decision lasts at least this
    adaptive_follower_sample: int = 20  # followers whose reading rates stand for the rest
    adaptive_meter_share: float = 0.1  # reads and posts counted (each weighs 1 / this)
    # Consistency auditor (socialapp.services.audit): first pages as served against MongoDB
    audit_interval_seconds: float = 60.0  # one round per interval; 0 turns the auditor off
    audit_sample: int = 5  # readers audited per round
    # posts newer than the grace are not compared; a fault counts once a second look this
    # much later finds it again (deliveries and deletions in flight settle meanwhile)
    audit_grace_seconds: float = 10.0
    # Streaming (``socialapp stream``): Mastodon's streaming API in its own asyncio process
    streaming_url: str = ""  # what clients are told (wss://...); empty: this host, streaming_port
    streaming_port: int = 0  # `serve` binds its streaming process here (0: a free port)
    api_url: str = ""  # where the streaming process asks the API (`serve` sets its own)
    public_url: str = ""  # the API as clients reach it, if not api_url: links in streamed posts
    streaming_heartbeat_seconds: float = 15.0  # a comment line after this long without events
    streaming_buffer_events: int = 256  # events a stream may hold unsent; then it is closed
    embedded_worker_queues: str = "fanout,fanout_large,feed"  # what `serve`'s own worker takes
    metrics_port: int = 0  # `socialapp worker` serves /metrics here (0: not at all)
    # Rate limits ("N/unit" rules joined by ";"), kept in the timelines' Redis
    rate_limits_enabled: bool = True
    rate_limit_writes: str = "60/minute;600/hour"  # per caller, every write together
    rate_limit_writes_per_address: str = "300/minute;3000/hour"  # per client address
    rate_limit_signups: str = "10/hour"  # per client address
    rate_limit_tokens: str = "10/minute;100/hour"  # per target handle, failed or not
    rate_limit_tokens_per_address: str = "30/minute;300/hour"  # per client address
    trusted_proxies: int = 0  # proxies in front that append to X-Forwarded-For

    @property
    def production(self) -> bool:
        return self.env == "production"

    @property
    def embedded_mongo(self) -> bool:
        return not self.mongo_uri

    @property
    def drawn_key(self) -> bool:
        """Whether the signing key is this process's ``PROCESS_KEY``: none was configured."""
        return self.secret_key == PROCESS_KEY

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides) -> Settings:
        """Build settings from ``SOCIALAPP_<FIELD>`` variables, then apply ``overrides``."""
        environ = os.environ if environ is None else environ
        values = {}
        for field in dataclasses.fields(cls):
            raw = environ.get(PREFIX + field.name.upper())
            if raw is not None and (raw != "" or field.name in KEPT_EMPTY):
                values[field.name] = _parse(field, raw)
        values.update(overrides)
        settings = cls(**values)
        return settings.checked()

    def checked(self) -> Settings:
        if self.production and len(self.secret_key) < 32:
            raise ConfigError(
                "SOCIALAPP_SECRET_KEY must be set (32+ characters) when SOCIALAPP_ENV=production"
            )
        if self.production and self.embedded_mongo:
            raise ConfigError("SOCIALAPP_MONGO_URI must be set when SOCIALAPP_ENV=production")
        if self.operator_handle and not is_handle(self.operator_handle):
            raise ConfigError(f"SOCIALAPP_OPERATOR_HANDLE: {RULE}")
        self._check_redis()
        if self.task_serializer not in TASK_SERIALIZERS:
            raise ConfigError(f"SOCIALAPP_TASK_SERIALIZER must be one of {TASK_SERIALIZERS}")
        for name in ("audit_interval_seconds", "audit_sample", "audit_grace_seconds"):
            if not 0 <= getattr(self, name) < math.inf:  # NaN fails too
                raise ConfigError(f"{PREFIX}{name.upper()} must be a finite number, 0 or more")
        if not self.secret_key:
            return dataclasses.replace(self, secret_key=PROCESS_KEY)
        return self

    def _check_redis(self) -> None:
        """Refuse a broker that cannot work, rather than answer 201 to posts that never fan
        out: Celery's Redis transport SELECTs a database, which a Redis Cluster refuses."""
        if self.redis_cluster and not self.broker_url:
            raise ConfigError(
                "SOCIALAPP_REDIS_CLUSTER=true needs SOCIALAPP_BROKER_URL: the Celery broker "
                "cannot live on a Redis Cluster (it would land on database 1 of a cluster "
                "node, where SELECT is not allowed); give it its own redis-server"
            )
        if self.embedded_redis_cluster not in (0, EMBEDDED_CLUSTER_MASTERS):
            raise ConfigError(
                f"SOCIALAPP_EMBEDDED_REDIS_CLUSTER must be 0 (one redis-server) or "
                f"{EMBEDDED_CLUSTER_MASTERS} (masters, one replica each)"
            )
        if self.embedded_redis_cluster and (self.redis_url or self.redis_cluster):
            raise ConfigError(
                "SOCIALAPP_EMBEDDED_REDIS_CLUSTER starts the service's own cluster: leave "
                "SOCIALAPP_REDIS_URL and SOCIALAPP_REDIS_CLUSTER unset"
            )


def _parse(field: dataclasses.Field, raw: str):
    kind = field.type
    try:
        if kind == "bool":
            if raw.lower() in {"1", "true", "yes", "on"}:
                return True
            if raw.lower() in {"0", "false", "no", "off"}:
                return False
            raise ValueError(raw)
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
    except ValueError as error:
        raise ConfigError(f"{PREFIX}{field.name.upper()}: cannot read {raw!r} as {kind}") from error
    return raw
