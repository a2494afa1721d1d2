"""Property-based API tests: every operation of /openapi.json, with generated input, in-process.

Schemathesis reads the app's own spec and sends generated requests, valid and invalid, to
each operation, authenticated as a signed-up user (an operator on /v1/admin); half of them
name a user or post that exists. Every response must be a documented status with the
documented content type, headers and body, and never a 5xx. SOCIALAPP_FUZZ_EXAMPLES runs
more examples per operation (25 by default, to keep CI quick).

Each operation gets its own Hypothesis test, built here rather than through
``schemathesis.pytest.from_fixture``, whose lazy loading does not run under pytest 9.
"""

from __future__ import annotations

import dataclasses
import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, strategies
from hypothesis import settings as hypothesis_settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from socialapp.services import seed as seeding
from tests.service.test_ops import CONTRACT

pytestmark = pytest.mark.slow  # long: started first (tests/conftest.py)

# Per operation: 18 keeps the run's total near what 25 gave before lists, tags and the public
# timelines added about 25 operations (`make test` within its 15 minutes); more by the variable.
EXAMPLES = int(os.environ.get("SOCIALAPP_FUZZ_EXAMPLES", "18"))
OPERATOR = {"handle": "root_operator", "password": "operator password"}
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@pytest.fixture
def settings(settings):
    return dataclasses.replace(
        settings, operator_handle=OPERATOR["handle"], operator_password=OPERATOR["password"]
    )


@pytest.fixture
def world(client, signup, components, monkeypatch):
    """Two users, a post with a comment, a notification, a list, an operator, and the headers
    that act as them."""
    # A generated seed request may ask for 100,000 accounts: the endpoint runs, the writing not.
    written = dict.fromkeys(("accounts", "follows", "posts"), 0)
    monkeypatch.setattr(seeding, "generate", lambda *collaborators, **params: written)
    ada, bob = signup("ada"), signup("bob")
    client.put(f"/v1/me/following/{bob.id}", headers=ada.headers)
    post = client.post("/v1/posts", json={"text": "hello"}, headers=bob.headers).json
    client.post(f"/v1/posts/{post['id']}/comments", json={"text": "hi"}, headers=ada.headers)
    listed = client.post("/v1/me/lists", json={"title": "l"}, headers=ada.headers).json
    client.put(f"/v1/me/lists/{listed['id']}/members/{bob.id}", headers=ada.headers)
    token = client.post("/v1/auth/token", json=OPERATOR).json["access_token"]
    followed = components.notifier.apply("follow", int(bob.id), {"recipient_id": int(ada.id)})
    keywords = {"title": "f", "context": ["home"], "keywords_attributes": [{"keyword": "x"}]}
    kept = client.post("/api/v2/filters", json=keywords, headers=ada.headers).json
    status = {"status_id": post["id"]}
    filtered = client.post(
        f"/api/v2/filters/{kept['id']}/statuses", json=status, headers=ada.headers
    )
    return {
        "user": ada.headers,
        "operator": {"Authorization": f"Bearer {token}"},
        "ids": {
            "user_id": [ada.id, bob.id],
            "account_id": [ada.id, bob.id],
            "post_id": [post["id"]],
            "status_id": [post["id"]],
            "notification_id": [str(followed["_id"])],
            "group_key": [followed["group_key"]],
            "name": ["café", "CAFÉ"],
            "hashtag": ["café", "CAFÉ"],
            "list_id": [listed["id"]],
            "filter_id": [kept["id"]],
            "keyword_id": [kept["keywords"][0]["id"]],
            "status_filter_id": [filtered.json["id"]],
        },
    }


def exercise(operation, world) -> None:
    """Send the generated cases of one operation and check every response."""
    headers = world["operator" if operation.path.startswith("/v1/admin") else "user"]
    cases = strategies.one_of(
        operation.as_strategy(GenerationMode.POSITIVE),
        operation.as_strategy(GenerationMode.NEGATIVE),
    )

    @given(case=cases, data=strategies.data())
    @hypothesis_settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    def run(case, data):
        if case.path_parameters and data.draw(strategies.booleans(), label="existing"):
            for name in case.path_parameters:
                case.path_parameters[name] = data.draw(strategies.sampled_from(world["ids"][name]))
        case.call_and_validate(headers=headers, checks=CHECKS)

    run()


SHARDS = 3  # xdist hands each class to a worker: the operations are fuzzed on all at once


def operations(app) -> list:
    """Every operation of the app's spec, in a fixed order."""
    schema = schemathesis.openapi.from_wsgi("/openapi.json", app)
    found = [result.ok() for result in schema.get_all_operations()]
    return sorted(found, key=lambda operation: (operation.path, operation.method.lower()))


class Shard:
    """One in ``SHARDS`` of the operations (each its own test, under its own timeout)."""

    shard: int

    def test_its_operations_keep_their_contract(self, app, world):
        failures = {}
        for operation in operations(app)[self.shard :: SHARDS]:
            try:
                exercise(operation, world)
            except (Exception, BaseExceptionGroup) as error:
                failures[(operation.path, operation.method.lower())] = error
        assert not failures, "\n\n".join(
            f"{method.upper()} {path}: {error}" for (path, method), error in failures.items()
        )


class TestFirstShard(Shard):
    shard = 0


class TestSecondShard(Shard):
    shard = 1


class TestThirdShard(Shard):
    shard = 2


def test_the_shards_fuzz_every_operation_of_the_contract(app):
    fuzzed = {(operation.path, operation.method.lower()) for operation in operations(app)}
    assert {(path, method) for path, methods in CONTRACT.items() for method in methods} <= fuzzed
    assert len({shard.shard for shard in Shard.__subclasses__()}) == SHARDS
