"""Errors the services raise; the API turns each into its HTTP status and JSON body."""

from __future__ import annotations

import kombu.exceptions
import pymongo.errors
import redis.exceptions


class Unavailable(Exception):
    """A backing store failed in a way its own error types do not say (a transaction gave up)."""


# A backing store that cannot answer now: callers retry later (HTTP 503 with Retry-After).
UNAVAILABLE = (
    Unavailable,
    pymongo.errors.ExecutionTimeout,
    pymongo.errors.ConnectionFailure,
    pymongo.errors.ServerSelectionTimeoutError,
    pymongo.errors.WriteConcernError,
    pymongo.errors.NotPrimaryError,
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    kombu.exceptions.OperationalError,
)


class AppError(Exception):
    status = 500

    def __init__(self, message: str, errors: dict | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors


class Unauthorized(AppError):
    status = 401


class Forbidden(AppError):
    status = 403


class NotFound(AppError):
    status = 404


class Conflict(AppError):
    status = 409


class Invalid(AppError):
    """A request that parsed but breaks a rule (e.g. following yourself)."""

    status = 422
