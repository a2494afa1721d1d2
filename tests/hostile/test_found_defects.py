"""The defects an attacker found (issue 9), one class each: every test here failed before
its fix, and each attacks every operation of the spec, not only the one first found."""

from __future__ import annotations

import dataclasses
import json

import marshmallow as ma
import pytest
from marshmallow import fields, validate

from socialapp import create_app
from socialapp.api import console, json_body, limits
from socialapp.api.base import Blueprint
from socialapp.api.fields import FullMatch
from socialapp.api.mastodon.errors import is_mastodon_path
from socialapp.api.posts import IdempotencyHeaders
from socialapp.config import ConfigError, Settings
from socialapp.errors import Invalid
from socialapp.services import accounts
from tests.hostile.attack import (
    VALID_BODIES,
    assert_json_error,
    body_operations,
    call,
    query_operations,
)

DEEP_BODIES = [
    "[" * 10_000 + "]" * 10_000,
    '{"text": ' + "[" * 10_000 + "]" * 10_000 + "}",
    '{"a":' * 5_000 + "1" + "}" * 5_000,
    "[" * (json_body.MAX_DEPTH + 1) + "]" * (json_body.MAX_DEPTH + 1),
]
HUGE = "1" + "0" * 5_000


def post_raw(client, world, method, path, body: str | bytes, content_type="application/json"):
    return call(client, world, method, path, data=body, content_type=content_type)


# 1. Deep nesting ---------------------------------------------------------------------------


def test_deeply_nested_bodies_are_400_on_every_body_operation(client, world, state):
    before = state()
    for method, path, _ in body_operations(world["spec"]):
        for body in DEEP_BODIES:
            response = post_raw(client, world, method, path, body)
            assert "nested deeper" in assert_json_error(response, 400)["message"], path
    assert state() == before


def test_nesting_up_to_the_bound_parses():
    at_bound = "[" * json_body.MAX_DEPTH + "]" * json_body.MAX_DEPTH
    assert json_body.parse(at_bound) == json.loads(at_bound)
    with pytest.raises(json_body.InvalidJson):
        json_body.parse("[" + at_bound + "]")


# 2. Huge numbers ---------------------------------------------------------------------------


def test_huge_integer_literals_in_any_body_field_are_400(client, world, state):
    before = state()
    for method, path, fields_ in body_operations(world["spec"]):
        for field in fields_:
            body = json.dumps({**VALID_BODIES[method, path], field: 0})
            body = body.replace(f'"{field}": 0', f'"{field}": {HUGE}')
            response = post_raw(client, world, method, path, body)
            assert "digits" in assert_json_error(response, 400)["message"], (path, field)
    assert state() == before


def test_huge_numbers_in_every_query_parameter_are_422(client, world):
    for method, path, names in query_operations(world["spec"]):
        for name in names:
            for value in ("9" * 5_000, "9" * 4_301, "1" + "0" * 20, "-" + "9" * 5_000):
                response = call(client, world, method, f"{path}?{name}={value}")
                assert name in assert_json_error(response, 422)["errors"]["query"], (path, name)


def test_nan_and_infinity_are_not_json(client, world, state):
    before = state()
    for method, path, fields_ in body_operations(world["spec"]):
        for constant in ("NaN", "Infinity", "-Infinity"):
            field = next(iter(fields_))
            body = json.dumps({**VALID_BODIES[method, path], field: 0})
            body = body.replace(f'"{field}": 0', f'"{field}": {constant}')
            assert_json_error(post_raw(client, world, method, path, body), 400)
    assert state() == before


# 3. A request's content never resets a rate limit ------------------------------------------


def limited_client(components, **rules):
    settings = dataclasses.replace(components.settings, rate_limits_enabled=True, **rules)
    app = create_app(settings, components)
    app.config["TESTING"] = True
    return app.test_client()


HOSTILE_TOKEN_BODIES = [
    *[(body, "application/json") for body in DEEP_BODIES],
    ('{"handle": "ada", "password": ' + HUGE + "}", "application/json"),
    ('{"handle": NaN, "password": "x"}', "application/json"),
    (b'{"handle": "\xff\xfe", "password": "x"}', "application/json"),
    ('{"handle": "ada\\ud800", "password": "x"}', "application/json"),
    ("handle=ada&password=x", "application/x-www-form-urlencoded"),
    ('{"handle": "ada", "password": "x"}', "text/plain"),
]


def test_a_hostile_token_request_never_resets_the_guess_budget(components, world):
    client = limited_client(components, rate_limit_tokens="3/minute")
    guess = {"handle": "ada", "password": "not the password"}
    assert [client.post("/v1/auth/token", json=guess).status_code for _ in range(3)] == [401] * 3
    right = {"handle": "ada", "password": "correct horse"}
    assert client.post("/v1/auth/token", json=right).status_code == 429
    for body, content_type in HOSTILE_TOKEN_BODIES:
        response = client.post("/v1/auth/token", data=body, content_type=content_type)
        assert response.status_code in (400, 422, 429), (body[:40], response.status_code)
        assert limits.storage_state() == "ok"
        assert client.post("/v1/auth/token", json=right).status_code == 429, body[:40]


def test_a_hostile_sign_up_never_resets_the_address_budget(components, world):
    client = limited_client(components, rate_limit_signups="2/hour")
    for handle in ("carol", "dave"):
        assert (
            client.post("/v1/users", json={"handle": handle, "password": "long enough"}).status_code
            == 201
        )
    for body, content_type in HOSTILE_TOKEN_BODIES:
        response = client.post("/v1/users", data=body, content_type=content_type)
        assert response.status_code == 429
        assert limits.storage_state() == "ok"
    response = client.post("/v1/users", json={"handle": "erin", "password": "long enough"})
    assert response.status_code == 429
    assert components.users.by_handle("erin") is None


def test_a_failing_key_function_counts_under_a_shared_key_not_fresh_memory(
    components, world, monkeypatch
):
    client = limited_client(components, rate_limit_writes="2/minute")
    ada = world["ada"].headers
    monkeypatch.setattr(limits.auth, "caller_id", lambda: 1 / 0)
    responses = [client.post("/v1/posts", json={"text": "x"}, headers=ada) for _ in range(3)]
    assert responses[-1].status_code == 429
    assert limits.storage_state() == "ok"


def test_only_an_unreachable_limiter_storage_falls_back_and_readyz_says_so(components, world):
    client = limited_client(
        components, redis_url="redis://127.0.0.1:9/0", rate_limit_writes="2/minute"
    )
    assert client.get("/readyz").json["checks"]["rate_limits"] == "ok"
    ada = world["ada"].headers
    statuses = [client.post("/v1/posts", json={"text": "x"}, headers=ada).status_code]
    statuses += [client.post("/v1/posts", json={"text": "x"}, headers=ada).status_code]
    statuses += [client.post("/v1/posts", json={"text": "x"}, headers=ada).status_code]
    assert statuses == [201, 201, 429]  # the same limits, in this process's memory
    ready = client.get("/readyz")
    assert ready.status_code == 503
    assert ready.json["checks"]["rate_limits"] == "unavailable"


# 4. Patterns match whole values -------------------------------------------------------------

LOOK_ALIKES = [
    "ops\n",
    "ops\r\n",
    "\nops",
    "ops ",
    " ops",
    "ops\t",
    "OPS",
    "ops\u200b",
    "\u043eps",  # Cyrillic o
    "ops\n\n",
    "o\nps",
]


def test_look_alike_handles_can_neither_sign_up_nor_sign_in(client, world, state):
    before = state()
    for handle in LOOK_ALIKES:
        body = {"handle": handle, "password": "long enough"}
        errors = assert_json_error(client.post("/v1/users", json=body), 422)["errors"]["json"]
        assert "handle" in errors, repr(handle)
        assert client.post("/v1/auth/token", json=body).status_code in (401, 422)
    assert state() == before


def test_no_path_into_the_store_takes_a_look_alike_handle(components):
    for handle in LOOK_ALIKES:
        with pytest.raises(Invalid):
            accounts.register(
                components.users, components.passwords, components.ids, handle, "long enough"
            )
        with pytest.raises(ConfigError, match="SOCIALAPP_OPERATOR_HANDLE"):
            Settings.from_env({"SOCIALAPP_OPERATOR_HANDLE": handle})
        assert components.users.by_handle(handle) is None


def test_display_names_cannot_smuggle_controls_or_bidi_overrides(client, world, state):
    before = state()
    for name in ("ops\n(operator)", "\u202eadmin", "ops\u2066x", "red\x1b[31m", "a\x08b"):
        body = {"handle": "mallory", "password": "long enough", "display_name": name}
        errors = assert_json_error(client.post("/v1/users", json=body), 422)["errors"]["json"]
        assert "display_name" in errors, repr(name)
    assert state() == before
    text = {"text": "two\r\nlines\n\tand a tab, \u05e2\u05d1\u05e8\u05d9\u05ea"}
    assert call(client, world, "post", "/v1/posts", json=text).status_code == 201
    errors = assert_json_error(
        call(client, world, "post", "/v1/posts", json={"text": "\x1b[2J"}), 422
    )
    assert "text" in errors["errors"]["json"]


def test_idempotency_keys_match_whole_values():
    """HTTP servers refuse line breaks in headers; the schema does not rely on it."""
    headers = IdempotencyHeaders()
    for key in ("key\n", "key\r\n", "\nkey", "key "):
        with pytest.raises(ma.ValidationError):
            headers.load({"Idempotency-Key": key})
    assert headers.load({"Idempotency-Key": "key"}) == {"idempotency_key": "key"}


# 5. Numbers are never coerced ---------------------------------------------------------------

WRONG_NUMBERS = [5.5, 7.0, "7", "7.0", "1e3", True, False, None, [7], {"n": 7}, 1e3]


def test_integer_body_fields_refuse_every_other_type(client, world, state, components):
    threshold = components.fanout_settings.read().current
    before, checked = state(), 0
    for method, path, fields_ in body_operations(world["spec"]):
        for field, rule in fields_.items():
            if rule.get("type") != "integer":
                continue
            checked += 1
            for wrong in WRONG_NUMBERS:
                body = {**VALID_BODIES[method, path], field: wrong}
                errors = assert_json_error(call(client, world, method, path, json=body), 422)
                assert field in errors["errors"]["json"], (path, field, wrong)
    assert checked >= 5
    assert state() == before
    assert components.fanout_settings.read().current == threshold


def test_integer_query_parameters_are_plain_digits(client, world):
    checked = 0
    for method, path, operation in _query_integers(world["spec"]):
        for name in operation:
            checked += 1
            for value in ("+5", "%205", "5%20", "\u0665", "5.0", "1e1", "0x10", "5_0", "", "-5"):
                response = call(client, world, method, f"{path}?{name}={value}")
                assert name in assert_json_error(response, 422)["errors"]["query"], (path, value)
            assert call(client, world, method, f"{path}?{name}=5").status_code == 200
    assert checked >= 4


def _query_integers(spec):
    for method, path, op in (
        (m, p, o) for p, ms in spec["paths"].items() for m, o in ms.items() if m != "parameters"
    ):
        names = [
            p["name"]
            for p in op.get("parameters", [])
            if p["in"] == "query" and p["schema"].get("type") == "integer"
        ]
        if names:
            yield method, path, names


def test_a_schema_that_coerces_or_matches_part_of_a_value_cannot_be_declared():
    blp = Blueprint("lenient", __name__)
    lenient = [
        ({"n": fields.Integer()}, "json"),
        ({"n": fields.Float()}, "json"),
        ({"n": fields.Decimal()}, "json"),
        ({"n": fields.Integer(strict=True)}, "query"),
        ({"s": fields.String(validate=validate.Regexp(r"^a$"))}, "json"),
        ({"s": fields.String(validate=validate.Regexp(r"^a$"))}, "query"),
        ({"inner": fields.Nested(ma.Schema.from_dict({"n": fields.Integer()}))}, "json"),
    ]
    for declared, location in lenient:
        with pytest.raises(TypeError):
            blp.arguments(ma.Schema.from_dict(declared), location=location)
    strict = {"n": fields.Integer(strict=True), "s": fields.String(validate=FullMatch("a"))}
    blp.arguments(ma.Schema.from_dict(strict))


# 6. Every view refuses unknown query parameters ----------------------------------------------


def concrete_routes(app, world):
    for rule in app.url_map.iter_rules():
        path = rule.rule.replace("<user_id>", world["ids"]["{user_id}"])
        path = path.replace("<post_id>", world["ids"]["{post_id}"])
        path = path.replace("<list_id>", world["ids"]["{list_id}"])
        for method in sorted(rule.methods - {"OPTIONS", "HEAD"}):
            yield method.lower(), path


def test_every_view_refuses_unknown_query_parameters(app, client, world, state, components):
    before, threshold = state(), components.fanout_settings.read()
    # The Mastodon API ignores unknown parameters, as Mastodon does: tests/mastodon/test_errors.py;
    # the console refuses them with a page: tests/service/test_console.py
    routes = [
        r
        for r in concrete_routes(app, world)
        if not is_mastodon_path(r[1]) and not console.is_console(r[1])
    ]
    assert len(routes) >= 20
    for method, path in routes:
        headers = world["operator"] if path.startswith("/v1/admin") else world["ada"].headers
        response = getattr(client, method)(f"{path}?unknown=1", headers=headers)
        errors = assert_json_error(response, 422)["errors"]["query"]
        assert "unknown" in errors, (method, path)
    assert state() == before
    assert components.fanout_settings.read() == threshold


def test_repeated_query_parameters_are_422(client, world):
    for method, path, names in query_operations(world["spec"]):
        for name in names:
            value = "5" if name == "limit" else world["ids"]["{post_id}"]
            response = call(client, world, method, f"{path}?{name}={value}&{name}={value}")
            assert name in assert_json_error(response, 422)["errors"]["query"], (path, name)


def test_a_preflight_with_a_query_string_is_still_answered(client):
    response = client.options("/v1/timeline/home?limit=20")
    assert response.status_code == 200


# 7. What Flask answers is JSON (the server's own answers: tests/e2e/test_e2e_server.py)


def test_doubled_slashes_are_never_an_html_redirect(client, world):
    user = world["ids"]["{user_id}"]
    for path in (f"/v1//users/{user}", "/v1/users//", "/v1//timeline/home"):
        response = client.get("/", environ_overrides={"PATH_INFO": path})
        assert_json_error(response, 404)
    for path in (f"//v1/users/{user}", "//healthz"):  # routing drops leading slashes
        response = client.get("/", environ_overrides={"PATH_INFO": path})
        assert response.status_code == 200 and response.mimetype == "application/json"


def test_options_and_empty_answers_are_not_html(client, world):
    response = client.options("/v1/posts")
    assert response.status_code == 200 and "POST" in response.headers["Allow"]
    assert "html" not in response.headers.get("Content-Type", "")
    liked = call(client, world, "put", "/v1/posts/{post_id}/like")
    assert liked.status_code == 204
    assert "html" not in liked.headers.get("Content-Type", "")
