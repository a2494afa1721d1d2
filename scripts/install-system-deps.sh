#!/usr/bin/env sh
# Installs the system packages socialapp needs: redis-server (timelines, broker),
# docker-compose (validating the production stack) and chromium (the tests' browser, driven
# by Playwright) and valgrind (callgrind counts Redis's instructions per delivery in
# `make benchmark-instructions` and its test). Debian and Ubuntu only.
set -e
if ! command -v apt-get >/dev/null 2>&1; then
    echo "socialapp needs redis-server 7 on PATH. Install it with your package manager" >&2
    echo "(e.g. 'brew install redis'), or point SOCIALAPP_REDIS_URL at a running Redis." >&2
    exit 1
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server docker-compose chromium valgrind >/dev/null
# The Debian package starts a system-wide server; socialapp runs its own.
$SUDO service redis-server stop >/dev/null 2>&1 || true
