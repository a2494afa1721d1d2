"""Every failure leaves as JSON in the shape of docs/api.md, never as HTML or a traceback."""

from __future__ import annotations

import logging

from flask import Flask
from werkzeug.exceptions import (
    HTTPException,
    InternalServerError,
    ServiceUnavailable,
    default_exceptions,
)

from socialapp.errors import AppError, Unavailable

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5


def register(app: Flask, api) -> None:
    def render(error: HTTPException, message: str, errors=None, headers=None):
        error.data = {"message": message, "headers": headers or {}}
        if errors:
            error.data["errors"] = errors
        return api.handle_http_exception(error)

    @app.errorhandler(AppError)
    def app_error(error: AppError):
        return render(default_exceptions[error.status](), error.message, error.errors)

    @app.errorhandler(Exception)
    def unexpected(error: Exception):
        if isinstance(error, HTTPException):
            return api.handle_http_exception(error)
        if isinstance(error, Unavailable):
            log.warning("backing store unavailable: %r", error)
            return render(
                ServiceUnavailable(),
                "a backing store is unavailable, retry later",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        log.exception("unhandled error")
        return render(InternalServerError(), "internal server error")
