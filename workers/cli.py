"""The ``socialapp`` command: serve the API, create operators, and more."""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import sys

from socialapp.config import ConfigError, Settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="socialapp", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve the API (threaded server, embedded defaults)")
    serve.set_defaults(run=_serve)

    operator = commands.add_parser("create-operator", help="create an operator account")
    operator.add_argument("handle")
    operator.set_defaults(run=_create_operator)

    args = parser.parse_args(argv)
    logging.basicConfig(level=os.environ.get("SOCIALAPP_LOG_LEVEL", "INFO"))
    try:
        return args.run(args, Settings.from_env())
    except ConfigError as error:
        print(f"socialapp: {error}", file=sys.stderr)
        return 2


def _serve(args, settings: Settings) -> int:
    from werkzeug.serving import make_server

    from socialapp.app import create_app

    app = create_app(settings)
    server = make_server(settings.host, settings.port, app, threaded=True)
    print(f"socialapp serving on http://{settings.host}:{settings.port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _create_operator(args, settings: Settings) -> int:
    from socialapp import wiring
    from socialapp.services import accounts

    if settings.embedded_mongo:
        print(
            "socialapp: the embedded store lives inside the serving process; set "
            "SOCIALAPP_OPERATOR_HANDLE and SOCIALAPP_OPERATOR_PASSWORD for `socialapp serve`, "
            "or set SOCIALAPP_MONGO_URI to create an operator in a real MongoDB",
            file=sys.stderr,
        )
        return 2
    password = os.environ.get("SOCIALAPP_OPERATOR_PASSWORD") or getpass.getpass("Password: ")
    if not 8 <= len(password) <= 128:
        print("socialapp: the password must be 8 to 128 characters", file=sys.stderr)
        return 2
    c = wiring.build(settings)
    c.ensure_indexes()
    user = accounts.ensure_operator(c.users, c.passwords, c.ids, args.handle, password)
    if not accounts.is_operator(user):
        print(f"socialapp: {args.handle!r} exists and is not an operator", file=sys.stderr)
        return 1
    print(f"operator {args.handle!r} ready (id {user['_id']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
