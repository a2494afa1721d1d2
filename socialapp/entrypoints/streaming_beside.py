"""The streaming process beside ``socialapp serve`` on the embedded default.

Apart from ``socialapp.entrypoints.streaming`` on purpose: the server imports this before
gunicorn sets ``PROMETHEUS_MULTIPROC_DIR``, and the streaming app's imports reach
prometheus_client, which reads that variable once, when first imported (importing them here
left the API's counters out of /metrics).
"""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys

from socialapp.config import Settings


class Beside:
    """The streaming process ``socialapp serve`` runs next to the API on the embedded
    default: on a socket bound here (``SOCIALAPP_STREAMING_PORT``, 0 for a free port), asking
    this server's API, reading its Redis. Stopped with the server."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._socket: socket.socket | None = None
        self._process: subprocess.Popen | None = None

    def start(self) -> Settings:
        """Start it; the settings the API serves with (naming the streaming port)."""
        host = self._settings.host
        self._socket = socket.create_server(
            (host, self._settings.streaming_port), backlog=4096, reuse_port=False
        )
        self._socket.set_inheritable(True)
        port = self._socket.getsockname()[1]
        api_host = "127.0.0.1" if host in ("0.0.0.0", "") else host
        env = {
            **os.environ,
            "SOCIALAPP_REDIS_URL": self._settings.redis_url,
            # the timelines' store as serve started it (its own cluster: a cluster URL)
            "SOCIALAPP_REDIS_CLUSTER": "true" if self._settings.redis_cluster else "false",
            "SOCIALAPP_BROKER_URL": self._settings.broker_url,
            "SOCIALAPP_EMBEDDED_REDIS_CLUSTER": "0",
            "SOCIALAPP_API_URL": self._settings.api_url
            or f"http://{api_host}:{self._settings.port}",
        }
        fd = str(self._socket.fileno())
        args = [sys.executable, "-m", "socialapp.entrypoints.cli", "stream", "--fd", fd]
        self._process = subprocess.Popen(args, env=env, pass_fds=(self._socket.fileno(),))
        self._socket.close()  # the streaming process has it; the API's workers need not
        print(f"socialapp streaming on http://{host}:{port}/api/v1/streaming", flush=True)
        return dataclasses.replace(self._settings, streaming_port=port)

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
