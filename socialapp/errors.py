"""Errors the services raise; the API turns each into its HTTP status and JSON body.

No database or queue driver is imported here: the stores translate their drivers' errors
into ``Unavailable`` (see ``socialapp.stores.unavailable``).
"""

from __future__ import annotations


class Unavailable(Exception):
    """A backing store cannot answer now: callers retry later (HTTP 503 with Retry-After,
    a Celery retry with backoff, or a read from MongoDB alone while Redis is down)."""


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
