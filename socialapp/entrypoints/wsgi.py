"""The API as a WSGI application, for any WSGI server: ``gunicorn 'socialapp.entrypoints.wsgi:app'``
(``gunicorn -c python:socialapp.entrypoints.gunicorn_conf`` for the project's settings).

Built when imported, in each server process (a gunicorn worker, after the fork). There is no
in-process worker or redis-server here: on the embedded default use ``socialapp serve``.
"""

from socialapp.app import create_app

app = create_app()
