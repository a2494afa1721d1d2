"""socialapp: a social feed backend that demonstrates fan-out strategies."""

from socialapp.app import create_app

__all__ = ["create_app"]
