"""socialapp: a social feed backend that demonstrates fan-out strategies."""


def create_app(*args, **kwargs):
    """The API (``socialapp.app.create_app``), imported only when built: a gunicorn master that
    loads this package imports neither the app nor prometheus_client before its workers fork."""
    from socialapp.app import create_app as build

    return build(*args, **kwargs)


__all__ = ["create_app"]
