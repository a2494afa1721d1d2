"""Hostile input: smuggled MongoDB operators, oversized and unknown fields, forged tokens,
handle probing, leaked internals, insecure production start-up and open CORS.

Every body and query parameter is taken from the app's own OpenAPI spec, so an endpoint
added later is attacked too (its valid body must be added to VALID_BODIES).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import io
import json
import time

import argon2
import pytest

from socialapp import create_app
from socialapp.app import MAX_BODY_BYTES
from socialapp.config import ConfigError, Settings
from socialapp.entrypoints import cli
from socialapp.services import operators, posts, timeline
from tests.hostile.attack import (
    OPERATORS,
    VALID_BODIES,
    assert_json_error,
    body_operations,
    call,
    query_parameters,
)


def test_every_body_operation_is_attacked(world):
    assert {(m, p) for m, p, _ in body_operations(world["spec"])} == set(VALID_BODIES)


def test_mongodb_operators_in_any_body_field_are_422(client, world, state):
    before = state()
    for method, path, fields in body_operations(world["spec"]):
        for field in fields:
            for smuggled in OPERATORS:
                body = {**VALID_BODIES[method, path], field: smuggled}
                response = call(client, world, method, path, json=body)
                errors = assert_json_error(response, 422)["errors"]["json"]
                assert field in errors, (method, path, field, smuggled, errors)
    assert state() == before


def test_operator_keys_and_unknown_fields_are_422(client, world, state):
    before = state()
    for method, path, _ in body_operations(world["spec"]):
        for extra in ("$where", "$set", "_id", "role", "author_id", "text.$", "handle "):
            body = {**VALID_BODIES[method, path], extra: "operator"}
            errors = assert_json_error(call(client, world, method, path, json=body), 422)
            assert errors["errors"]["json"] == {extra: ["Unknown field."]}, (path, extra)
    assert state() == before


def test_sign_up_cannot_ask_for_the_operator_role(client, components):
    body = {"handle": "eve", "password": "long enough", "role": "operator"}
    assert_json_error(client.post("/v1/users", json=body), 422)
    assert components.users.by_handle("eve") is None


def test_login_bypass_with_operators_is_refused(client, world):
    for smuggled in OPERATORS:
        for body in (
            {"handle": "ada", "password": smuggled},
            {"handle": smuggled, "password": smuggled},
        ):
            response = client.post("/v1/auth/token", json=body)
            assert_json_error(response, 422)
            assert "access_token" not in response.get_json()


def test_every_string_and_number_limit_holds_one_past_it(client, world, state):
    """The longest (largest) value each field allows is not a 422; one more is."""
    checked = 0
    for method, path, fields in body_operations(world["spec"]):
        for field, rule in fields.items():
            if "maxLength" in rule:
                at_limit, past = "a" * rule["maxLength"], "a" * (rule["maxLength"] + 1)
            elif "maximum" in rule and rule.get("type") == "integer":
                at_limit, past = rule["maximum"], rule["maximum"] + 1
            else:
                continue
            checked += 1
            before = state()
            response = call(
                client, world, method, path, json={**VALID_BODIES[method, path], field: past}
            )
            errors = assert_json_error(response, 422)["errors"]["json"]
            assert field in errors, (method, path, field)
            assert state() == before
            response = call(
                client, world, method, path, json={**VALID_BODIES[method, path], field: at_limit}
            )
            assert response.status_code != 422, (method, path, field, response.get_json())
    assert checked >= 10


def test_bodies_over_64_kib_are_413(client, world, state):
    before = state()
    too_big = json.dumps({"text": "a" * MAX_BODY_BYTES}).encode()
    for method, path, _ in body_operations(world["spec"]):
        response = call(client, world, method, path, data=too_big, content_type="application/json")
        assert_json_error(response, 413)
    assert state() == before


def post_chunked(client, headers, body: bytes):
    return client.post(
        "/v1/posts",
        input_stream=io.BytesIO(body),
        content_type="application/json",
        headers={**headers, "Transfer-Encoding": "chunked"},
        environ_overrides={"wsgi.input_terminated": True},  # as servers set for chunked bodies
    )


def test_chunked_bodies_over_64_kib_are_413(client, world, state):
    """Without a Content-Length the limit holds while reading: no truncated body is parsed."""
    headers = world["ada"].headers
    # Valid JSON in its first 64 KiB: parsing the body cut at the limit would accept it.
    sneaky = b'{"text": "sneaky"}' + b" " * MAX_BODY_BYTES
    before = state()
    for body in (sneaky, json.dumps({"text": "a" * MAX_BODY_BYTES}).encode()):
        assert_json_error(post_chunked(client, headers, body), 413)
    assert state() == before
    at_limit = b'{"text": "at the limit"}'.ljust(MAX_BODY_BYTES)
    assert post_chunked(client, headers, at_limit).status_code == 201
    assert post_chunked(client, headers, b'{"text": "small"}').status_code == 201


def test_a_body_smuggled_into_a_read_is_refused_or_ignored(client, world, state):
    """Only a chunked request is read ahead for its length (a GET skips that check): a read
    that streams a body past the limit is still 413, and any other Transfer-Encoding, with
    or without a body, never reaches a 500."""
    headers = world["ada"].headers
    before = state()

    def home(body: bytes, encoding: str):
        return client.get(
            "/v1/timeline/home",
            input_stream=io.BytesIO(body),
            headers={**headers, "Transfer-Encoding": encoding},
            environ_overrides={"wsgi.input_terminated": True},
        )

    assert_json_error(home(b"x" * (MAX_BODY_BYTES + 1), "chunked"), 413)
    for encoding in ("chunked", "gzip", "identity", "chunked, chunked", "\x00", ""):
        for body in (b"", b'{"limit": 1}', b"\xff" * 100):
            response = home(body, encoding)
            assert response.status_code in (200, 400, 413), (encoding, response.status_code)
            if response.status_code != 200:
                assert_json_error(response, response.status_code)
    assert state() == before


def test_refused_tokens_are_checked_again_every_time(app, client, world, monkeypatch):
    """A verified token's claims are remembered; a refused one never is, so a forgery sent
    again is verified again and refused again, even right after its genuine twin."""
    from socialapp import security

    ada = world["ada"]
    decoded = []
    decode = security.jwt.decode
    monkeypatch.setattr(
        security.jwt, "decode", lambda *a, **k: decoded.append(1) or decode(*a, **k)
    )
    now = int(time.time())  # a genuine token no request has shown yet
    claims = {"sub": ada.id, "iat": now - 5, "exp": now + 600, "iss": "socialapp"}
    genuine = token({"alg": "HS256"}, claims, hmac_signer(app.config["SECRET_KEY"].encode()))
    forged = tampered(genuine)
    for _ in range(3):
        assert client.get("/v1/timeline/home", headers=bearer(genuine)).status_code == 200
        assert client.get("/v1/timeline/home", headers=bearer(forged)).status_code == 401
    assert len(decoded) == 4  # the genuine token once, the forged one each time


def test_mongodb_operators_in_query_parameters_are_422(client, world):
    smuggled = ["[$gt]=1", "[$ne]=1", "[$regex]=.*", "[]=1", "[$where]=1", ".$gt=1"]
    for method, path, names, required in query_parameters(world["spec"]):
        for name in names:
            for suffix in smuggled:
                response = call(client, world, method, f"{path}?{name}{suffix}")
                errors = assert_json_error(response, 422)["errors"]["query"]
                smuggled_key = f"{name}{suffix.split('=')[0]}"
                # The required parameters are also reported missing; nothing else may be.
                allowed = {smuggled_key, name, *required}
                assert smuggled_key in errors and set(errors) <= allowed, errors
            for value in ("$gt", '{"$gt":""}', "[1]"):
                response = call(client, world, method, f"{path}?{name}={value}")
                assert_json_error(response, 422)
        assert_json_error(call(client, world, method, f"{path}?$where=1"), 422)


# Tokens -----------------------------------------------------------------------------------


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def token(header: dict, claims: dict, sign=None) -> str:
    """A JWT built by hand, so that no library refuses to make the hostile ones."""
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"
    signature = sign(signing_input.encode()) if sign else b""
    return f"{signing_input}.{b64(signature)}"


def hmac_signer(key: bytes, digest=hashlib.sha256):
    return lambda data: hmac.new(key, data, digest).digest()


def without(claims: dict, name: str) -> dict:
    return {key: value for key, value in claims.items() if key != name}


def forged_tokens(app, user_id: str) -> dict[str, str]:
    key = app.config["SECRET_KEY"].encode()
    signed = hmac_signer(key)
    now = int(time.time())
    claims = {"sub": user_id, "iat": now, "exp": now + 600, "iss": "socialapp"}
    attacker = b"attacker key that is long enough for hmac-sha256"
    hs256 = {"alg": "HS256", "typ": "JWT"}
    confusion = {**hs256, "kid": "../../dev/null", "jku": "https://evil.example/jwks.json"}
    return {
        "alg none": token({"alg": "none", "typ": "JWT"}, claims),
        "alg None": token({"alg": "None"}, claims),
        "alg none, signed anyway": token({"alg": "none"}, claims, signed),
        "HS512, same key": token({"alg": "HS512"}, claims, hmac_signer(key, hashlib.sha512)),
        "HS384, same key": token({"alg": "HS384"}, claims, hmac_signer(key, hashlib.sha384)),
        "RS256 header, HMAC signature": token({"alg": "RS256"}, claims, signed),
        "RS256 header, junk signature": token({"alg": "RS256"}, claims, lambda d: b"\1" * 256),
        "key confusion: embedded jwk": token(
            {**hs256, "jwk": {"kty": "oct", "k": b64(attacker)}}, claims, hmac_signer(attacker)
        ),
        "key confusion: kid and jku": token(confusion, claims, hmac_signer(b"")),
        "empty key": token(hs256, claims, hmac_signer(b"")),
        "other key": token(hs256, claims, hmac_signer(attacker)),
        "no signature": token(hs256, claims),
        "missing exp": token(hs256, without(claims, "exp"), signed),
        "future iat, no exp": token(hs256, without({**claims, "iat": now + 3600}, "exp"), signed),
        "future iat": token(hs256, {**claims, "iat": now + 3600}, signed),
        "missing iat": token(hs256, without(claims, "iat"), signed),
        "missing iss": token(hs256, without(claims, "iss"), signed),
        "wrong issuer": token(hs256, {**claims, "iss": "someone-else"}, signed),
        "expired": token(hs256, {**claims, "iat": now - 7200, "exp": now - 3600}, signed),
        "missing sub": token(hs256, without(claims, "sub"), signed),
        "sub not an id": token(hs256, {**claims, "sub": "ada"}, signed),
        "claims changed after signing": tampered(token(hs256, claims, signed)),
    }


def tampered(valid: str) -> str:
    header, claims, signature = valid.split(".")
    claims = json.loads(base64.urlsafe_b64decode(claims + "=="))
    return f"{header}.{b64(json.dumps({**claims, 'sub': '1'}).encode())}.{signature}"


def test_forged_tokens_get_the_same_generic_401(app, client, world, state):
    ada = world["ada"]
    now = int(time.time())
    claims = {"sub": ada.id, "iat": now, "exp": now + 600, "iss": "socialapp"}
    genuine = token({"alg": "HS256"}, claims, hmac_signer(app.config["SECRET_KEY"].encode()))
    # The hand-made tokens are right but for what each one forges.
    assert client.get("/v1/timeline/home", headers=bearer(genuine)).status_code == 200
    before = state()
    bodies = set()
    for name, forged in forged_tokens(app, ada.id).items():
        for method, path in (
            ("get", "/v1/timeline/home"),
            ("post", "/v1/posts"),
            ("put", "/v1/admin/fanout"),
            ("delete", f"/v1/posts/{world['ids']['{post_id}']}"),
        ):
            response = getattr(client, method)(path, headers=bearer(forged), json={"text": "x"})
            assert response.status_code == 401, (name, path, response.get_json())
            bodies.add(response.get_data())
    assert state() == before
    assert [json.loads(body) for body in bodies] == [
        {"code": 401, "status": "Unauthorized", "message": "invalid or expired token"}
    ]


def test_a_genuine_token_for_no_account_writes_nothing(client, components, world, state):
    """A token outlives its account (an embedded store restarted empty): no write as no one."""
    ghost = bearer(components.tokens.issue(components.ids.next_id()))
    assert client.get("/v1/timeline/home", headers=ghost).status_code == 200  # reads are cheap
    before = state()
    writes = [
        (method, path)
        for path, operations in world["spec"]["paths"].items()
        for method, operation in operations.items()
        if method in ("post", "put", "patch", "delete") and operation.get("security")
    ]
    assert len(writes) >= 8
    for method, template in writes:
        path = template
        for name, value in world["ids"].items():
            path = path.replace(name, value)
        body = VALID_BODIES.get((method, template))
        response = getattr(client, method)(path, headers=ghost, json=body)
        assert response.status_code == 401, (method, template, response.get_json())
    assert state() == before


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def test_unknown_handle_costs_a_password_hash_like_a_wrong_password(
    client, components, monkeypatch
):
    client.post("/v1/users", json={"handle": "ada", "password": "correct horse"})
    verified = []
    real_verify = argon2.PasswordHasher.verify

    def spy(hasher, password_hash, password):
        verified.append(password_hash)
        return real_verify(hasher, password_hash, password)

    monkeypatch.setattr(argon2.PasswordHasher, "verify", spy)
    wrong = client.post("/v1/auth/token", json={"handle": "ada", "password": "not it at all"})
    assert verified == [components.users.by_handle("ada")["password_hash"]]
    verified.clear()
    unknown = client.post("/v1/auth/token", json={"handle": "nobody", "password": "not it at all"})
    assert len(verified) == 1
    decoy = verified[0]
    assert decoy.startswith("$argon2id$")
    # The decoy is hashed with the same costs as real passwords, so it takes as long to check.
    real = components.users.by_handle("ada")["password_hash"]
    assert decoy.split("$")[:4] == real.split("$")[:4]
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.get_data() == unknown.get_data()
    assert without_request_id(wrong.headers) == without_request_id(unknown.headers)
    # Even the decoy's own password does not open an unknown handle.
    decoy_password = {"handle": "nobody", "password": "decoy password"}
    assert client.post("/v1/auth/token", json=decoy_password).status_code == 401


def without_request_id(headers) -> dict:
    """The headers but ``X-Request-Id``, which names each request (socialapp/api/request_log)."""
    return {name: value for name, value in headers.items() if name != "X-Request-Id"}


# Internals never leak ---------------------------------------------------------------------

SECRET = "secret detail /srv/socialapp/services/posts.py line 42"


def boom(*args, **kwargs):
    raise RuntimeError(SECRET)


@pytest.mark.parametrize(
    ("module", "function", "method", "path", "body"),
    [
        (posts, "get_post", "get", "/v1/posts/{post_id}", None),
        (posts, "create_post", "post", "/v1/posts", {"text": "hello"}),
        (timeline, "read_home", "get", "/v1/timeline/home", None),
        (operators, "change_fanout", "put", "/v1/admin/fanout", {"mode": "read"}),
    ],
)
def test_internal_errors_are_a_generic_json_500(
    client, world, monkeypatch, caplog, module, function, method, path, body
):
    monkeypatch.setattr(module, function, boom)
    response = call(client, world, method, path, json=body)
    assert response.status_code == 500
    assert response.mimetype == "application/json"
    assert response.get_json() == {
        "code": 500,
        "status": "Internal Server Error",
        "message": "internal server error",
    }
    text = response.get_data(as_text=True) + str(response.headers)
    for leak in ("Traceback", "secret detail", "/srv/", ".py", "RuntimeError", "socialapp."):
        assert leak not in text
    assert SECRET in caplog.text  # for the operators, in the log


# Start-up safety and CORS -----------------------------------------------------------------


def test_production_refuses_a_missing_or_short_secret_key():
    production = {"SOCIALAPP_ENV": "production", "SOCIALAPP_MONGO_URI": "mongodb://db:27017"}
    for key in (None, "", "k" * 31):
        environ = production if key is None else {**production, "SOCIALAPP_SECRET_KEY": key}
        with pytest.raises(ConfigError, match="SOCIALAPP_SECRET_KEY"):
            Settings.from_env(environ)
    assert (
        Settings.from_env({**production, "SOCIALAPP_SECRET_KEY": "k" * 32}).secret_key == "k" * 32
    )


def test_serve_in_production_without_a_secret_exits_with_a_clear_message(monkeypatch, capsys):
    from socialapp.entrypoints import server

    def never(*args, **kwargs):
        raise AssertionError("started serving without a secret key")

    monkeypatch.setattr(server.Application, "run", never)
    monkeypatch.setattr(cli.logs, "configure", lambda *args, **kwargs: None)
    for name in ("SOCIALAPP_SECRET_KEY", "SOCIALAPP_REDIS_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SOCIALAPP_ENV", "production")
    monkeypatch.setenv("SOCIALAPP_MONGO_URI", "mongodb://db:27017")
    for key in (None, "too short"):
        if key:
            monkeypatch.setenv("SOCIALAPP_SECRET_KEY", key)
        assert cli.main(["serve"]) != 0
        err = capsys.readouterr().err
        assert "SOCIALAPP_SECRET_KEY must be set" in err and "production" in err
        assert "Traceback" not in err


def test_cors_answers_only_the_listed_origins(settings):
    origins = "https://app.example, https://admin.example"
    client = create_app(dataclasses.replace(settings, cors_origins=origins)).test_client()
    preflight = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "Authorization, Idempotency-Key",
    }
    for origin in ("https://app.example", "https://admin.example"):
        response = client.options("/v1/posts", headers={"Origin": origin, **preflight})
        assert response.headers["Access-Control-Allow-Origin"] == origin
        allowed = response.headers["Access-Control-Allow-Headers"].lower()
        assert "authorization" in allowed and "idempotency-key" in allowed
        assert "Access-Control-Allow-Credentials" not in response.headers
        read = client.get("/v1/timeline/home", headers={"Origin": origin})
        exposed = read.headers["Access-Control-Expose-Headers"].lower()
        assert "retry-after" in exposed and "x-fanout-mode" in exposed
    for origin in (
        "https://evil.example",
        "null",
        "https://app.example.evil.example",
        "http://app.example",
    ):
        for response in (
            client.options("/v1/posts", headers={"Origin": origin, **preflight}),
            client.get("/healthz", headers={"Origin": origin}),
            client.post("/v1/posts", headers={"Origin": origin}, json={"text": "x"}),
        ):
            assert "Access-Control-Allow-Origin" not in response.headers, origin
    unlisted = create_app(settings).test_client()
    response = unlisted.options("/v1/posts", headers={"Origin": "https://app.example", **preflight})
    assert not [name for name, _ in response.headers if name.startswith("Access-Control-")]


def test_a_blocked_account_finds_no_way_around_the_block(client, world, signup, state):
    """Bob, blocked by Ada, tries her post directly, through Cyd's boost of it, with an
    idempotency key he used before the block, and through the Mastodon API: every write is
    403 and writes nothing, every Mastodon read of her status is 404."""
    ada, bob, cyd = world["ada"], world["other"], signup("cyd")
    post_id = world["ids"]["{post_id}"]
    key = {"Idempotency-Key": "bob-comment-1"}
    first = client.post(
        f"/v1/posts/{post_id}/comments", json={"text": "before"}, headers={**bob.headers, **key}
    )
    assert first.status_code == 201
    boost_id = client.put(f"/v1/posts/{post_id}/boost", headers=cyd.headers).json["id"]
    assert client.put(f"/v1/me/blocks/{bob.id}", headers=ada.headers).status_code == 204
    before = state()

    writes = [
        ("PUT", f"/v1/posts/{post_id}/like", None, {}),
        ("PUT", f"/v1/posts/{boost_id}/like", None, {}),
        ("POST", f"/v1/posts/{post_id}/comments", {"text": "after"}, key),
        ("POST", f"/v1/posts/{boost_id}/comments", {"text": "after"}, {}),
        ("PUT", f"/v1/posts/{boost_id}/boost", None, {}),
        ("POST", f"/api/v1/statuses/{post_id}/favourite", None, {}),
        ("POST", f"/api/v1/statuses/{boost_id}/favourite", None, {}),
        ("POST", f"/api/v1/statuses/{boost_id}/reblog", None, {}),
    ]
    for method, path, body, headers in writes:
        response = client.open(path, method=method, json=body, headers={**bob.headers, **headers})
        assert response.status_code == 403, (path, response.status_code)
        assert response.is_json and response.json, path
    for path in (f"/api/v1/statuses/{post_id}", f"/api/v1/statuses/{first.json['id']}/context"):
        assert client.get(path, headers=bob.headers).status_code == 404, path
    for status_id in (post_id, boost_id, first.json["id"]):  # a reply, whatever it names
        reply = {"status": "after", "in_reply_to_id": status_id}
        answer = client.post("/api/v1/statuses", data=reply, headers=bob.headers)
        assert answer.status_code == 404 and answer.json["error"], status_id
    for path in (f"/v1/posts/{post_id}", f"/v1/posts/{post_id}/comments", f"/v1/posts/{boost_id}"):
        assert client.get(path, headers=bob.headers).status_code == 404, path
    assert client.get(f"/api/v1/accounts/{ada.id}/statuses", headers=bob.headers).json == []
    assert state() == before
    # the same token reaches the same routes where no block stands
    assert (
        client.post(f"/api/v1/statuses/{boost_id}/favourite", headers=cyd.headers).status_code
        == 200
    )
