"""Generated hostile requests on every operation: raw bodies, query strings and headers.

Whatever arrives, the answer is JSON and never a 5xx; a refused request changes nothing;
and no request, however malformed, spends or resets a rate limit it should not (the limits
are checked after every generated request). SOCIALAPP_FUZZ_EXAMPLES scales the runs.
"""

from __future__ import annotations

import dataclasses
import json
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from socialapp import create_app
from socialapp.api import limits
from tests.hostile.attack import VALID_BODIES, operations

EXAMPLES = int(os.environ.get("SOCIALAPP_FUZZ_EXAMPLES", "25")) * 6
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
ATTACKER = "10.9.9.9"

# Leaves that broke parsers somewhere: huge and odd numbers, surrogates, NUL, operators.
RAW_LEAVES = st.sampled_from(
    [
        "1" + "0" * 5_000,
        "-" + "9" * 4_400,
        "1e999",
        "-0",
        "0.0000001",
        "NaN",
        "Infinity",
        '"\\ud800"',
        '"\\udfff\\ud800"',
        '"a\\u0000b"',
        '{"$gt": ""}',
        '{"$where": "1"}',
        "true",
        "null",
        '""',
        '"' + "a" * 600 + '"',
        "[" * 40 + "]" * 40,
    ]
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def raw_bodies(draw, valid: dict | None):
    """Text or bytes that a client could send as a body."""
    kind = draw(st.sampled_from(["valid-with-raw-leaf", "json", "binary", "text", "deep"]))
    if kind == "valid-with-raw-leaf" and valid:
        field = draw(st.sampled_from(sorted(valid)))
        body = json.dumps({**valid, field: "__LEAF__"})
        return body.replace('"__LEAF__"', draw(RAW_LEAVES))
    if kind == "json":
        return json.dumps(draw(JSON_VALUES))
    if kind == "binary":
        return draw(st.binary(max_size=300))
    if kind == "deep":
        depth = draw(st.integers(min_value=30, max_value=20_000))
        return draw(st.sampled_from(["[", '{"a":'])) * depth
    return draw(st.text(max_size=300))


CONTENT_TYPES = st.sampled_from(
    [
        "application/json",
        "application/json; charset=utf-16",
        "application/merge-patch+json",
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/xml",
        "",
    ]
)
QUERY_VALUES = st.one_of(
    st.sampled_from(
        ["", "0", "-1", "+5", "1e3", "5.0", "9" * 5_000, "$gt", '{"$gt":""}', "[1]", "%00", "%ff"]
    ),
    st.text(max_size=30),
    st.integers().map(str),
)


@st.composite
def query_strings(draw, declared: list[str]):
    names = st.sampled_from(declared) if declared else st.nothing()
    names = names | st.sampled_from(["x", "$where", "limit[$gt]", "max_id[]", "", "a" * 300])
    pairs = draw(st.lists(st.tuples(names, QUERY_VALUES), min_size=1, max_size=4))
    from urllib.parse import quote

    return "&".join(f"{quote(name)}={quote(value)}" for name, value in pairs)


HEADER_VALUES = st.one_of(
    st.sampled_from(
        [
            "",
            "Bearer",
            "Bearer " + "x" * 9_000,
            "Bearer a.b.c",
            "Basic YWRhOnB3",
            "Bearer \u00ff\u00fe",
            "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.",
            "$gt",
            "1" * 500,
            "\t",
        ]
    ),
    st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=60),
)
HEADER_NAMES = st.sampled_from(
    ["Authorization", "Idempotency-Key", "Content-Type", "Accept", "X-Forwarded-For", "Origin"]
)


def concrete(path: str, world) -> str:
    for name, value in world["ids"].items():
        path = path.replace(name, value)
    return path


def caller(path: str, world) -> dict:
    return world["operator"] if path.startswith("/v1/admin") else world["ada"].headers


def every_operation(world):
    return [(m, p, op) for m, p, op in operations(world["spec"])]


# what these answer when they can
NOT_JSON = {"/metrics": "text/plain", "/docs": "text/html",
            "/avatars/original/missing.png": "image/png",
            "/headers/original/missing.png": "image/png"}  # fmt: skip
# Pages a browser shows: their own refusals are pages too (what the app refuses before the
# view, a 405 or a 413, stays JSON).
PAGES = {"/oauth/authorize"}


def check_answer(response, path: str) -> None:
    assert response.status_code < 500, (response.status_code, response.get_data()[:300])
    if path in PAGES:
        assert response.mimetype in ("text/html", "application/json"), response.mimetype
        return
    if response.status_code < 400 and path in NOT_JSON:
        assert response.mimetype == NOT_JSON[path]
    elif response.status_code != 204 and response.get_data():
        assert response.mimetype == "application/json", response.get_data()[:200]
        assert "<html" not in response.get_data(as_text=True).lower()


def check_refused_changed_nothing(response, before, state) -> None:
    if response.status_code >= 400:
        assert state() == before, (response.status_code, response.get_json())


def send_raw_body(data, client, world, **kwargs):
    """A drawn operation called with a drawn raw body and content type; (path, response)."""
    targets = [(m, p, VALID_BODIES.get((m, p))) for m, p, _ in every_operation(world)]
    method, path, valid = data.draw(st.sampled_from(targets), label="operation")
    body = data.draw(raw_bodies(valid), label="body")
    content_type = data.draw(CONTENT_TYPES, label="content type")
    headers = {**caller(path, world), "Content-Type": content_type}
    response = getattr(client, method)(concrete(path, world), data=body, headers=headers, **kwargs)
    return path, response


def test_raw_bodies_on_every_operation(client, world, state):
    @FUZZ
    @given(data=st.data())
    def run(data):
        before = state()
        path, response = send_raw_body(data, client, world)
        check_answer(response, path)
        check_refused_changed_nothing(response, before, state)

    run()


def test_query_strings_on_every_operation(client, world, state):
    targets = [
        (m, p, [x["name"] for x in op.get("parameters", []) if x["in"] == "query"])
        for m, p, op in every_operation(world)
    ]

    @FUZZ
    @given(data=st.data())
    def run(data):
        method, path, declared = data.draw(st.sampled_from(targets), label="operation")
        query = data.draw(query_strings(declared), label="query")
        before = state()
        response = getattr(client, method)(
            concrete(path, world),
            query_string=query,
            headers=caller(path, world),
            json=VALID_BODIES.get((method, path)),
        )
        check_answer(response, path)
        check_refused_changed_nothing(response, before, state)

    run()


def test_headers_on_every_operation(client, world, state):
    targets = [(m, p) for m, p, _ in every_operation(world)]

    @FUZZ
    @given(data=st.data())
    def run(data):
        method, path = data.draw(st.sampled_from(targets), label="operation")
        headers = dict(caller(path, world))
        extra = data.draw(st.dictionaries(HEADER_NAMES, HEADER_VALUES, max_size=3))
        headers.update(extra)
        before = state()
        body = VALID_BODIES.get((method, path))
        kwargs = {"data": json.dumps(body)} if body is not None else {}
        response = getattr(client, method)(concrete(path, world), headers=headers, **kwargs)
        check_answer(response, path)
        check_refused_changed_nothing(response, before, state)

    run()


def test_no_hostile_request_spends_or_resets_a_rate_limit(components, world, state):
    """Budgets spent before the attack stay spent, on Redis, after every generated request."""
    limited = dataclasses.replace(
        components.settings,
        rate_limits_enabled=True,
        rate_limit_tokens="3/minute",
        rate_limit_signups="1/hour",
        rate_limit_writes="100000/hour",
        rate_limit_writes_per_address="100000/hour",
        rate_limit_tokens_per_address="100000/hour",
    )
    app = create_app(limited, components)
    app.config["TESTING"] = True
    client = app.test_client()
    at = {"environ_base": {"REMOTE_ADDR": ATTACKER}}
    wrong = {"handle": "ada", "password": "not the password"}
    assert [client.post("/v1/auth/token", json=wrong).status_code for _ in range(3)] == [401] * 3
    assert client.post("/v1/users", json={"handle": "mallory", "password": "x" * 8}, **at)
    right = {"handle": "ada", "password": "correct horse"}

    def budgets_hold() -> None:
        assert limits.storage_state() == "ok"
        assert client.post("/v1/auth/token", json=right, **at).status_code == 429
        signup = {"handle": "trudy", "password": "long enough"}
        assert client.post("/v1/users", json=signup, **at).status_code == 429

    budgets_hold()

    @FUZZ
    @given(data=st.data())
    def run(data):
        path, response = send_raw_body(data, client, world, **at)
        check_answer(response, path)
        budgets_hold()

    run()
    assert components.users.by_handle("trudy") is None
