"""Operator accounts and the /v1/admin fan-out controls."""

import datetime as dt

import pytest

from socialapp import bootstrap, create_app
from socialapp.config import Settings
from socialapp.entrypoints import cli
from socialapp.services import accounts
from socialapp.stores.fanout_changes import COMMAND_LINE
from tests.conftest import with_operator


@pytest.fixture
def settings(settings):
    return with_operator(settings)


def test_operator_is_created_from_the_environment_once(app, components, settings):
    first = components.users.by_handle("root_op")
    assert first["role"] == "operator"
    create_app(settings)  # a second start-up finds the account and keeps it
    assert components.users.by_handle("root_op")["_id"] == first["_id"]


def test_admin_needs_a_token_then_the_operator_role(client, signup, operator_headers):
    bob = signup("bob")
    for method, path, body in [
        ("get", "/v1/admin/fanout", None),
        ("put", "/v1/admin/fanout", {"mode": "read"}),
        ("put", f"/v1/admin/users/{bob.id}/fanout", {"strategy": "pull"}),
    ]:
        call = getattr(client, method)
        assert call(path, json=body).status_code == 401
        forbidden = call(path, json=body, headers=bob.headers)
        assert forbidden.status_code == 403 and forbidden.json["code"] == 403
    assert client.get("/v1/admin/fanout", headers=operator_headers).status_code == 200


def test_operator_switches_mode_and_threshold(client, operator_headers, components):
    response = client.put(
        "/v1/admin/fanout",
        json={"mode": "read", "celebrity_threshold": 50},
        headers=operator_headers,
    )
    assert response.status_code == 200
    assert response.json["mode"] == "read" and response.json["celebrity_threshold"] == 50
    assert response.json["settled"] is False  # the old config stays pending until reconciled
    current = components.fanout_settings.read().current
    assert (current.mode, current.celebrity_threshold) == ("read", 50)
    shown = client.get("/v1/admin/fanout", headers=operator_headers).json
    assert shown["mode"] == "read" and shown["pending"][0]["mode"] == "hybrid"


def test_switch_is_in_force_after_a_reconciliation(client, operator_headers, components, settle):
    client.put("/v1/admin/fanout", json={"mode": "write"}, headers=operator_headers)
    settle()
    shown = client.get("/v1/admin/fanout", headers=operator_headers).json
    assert shown["settled"] is True and shown["pending"] == []


def test_adaptive_mode_over_http_shows_its_decisions(client, signup, operator_headers, components):
    response = client.put("/v1/admin/fanout", json={"mode": "adaptive"}, headers=operator_headers)
    assert response.status_code == 200 and response.json["mode"] == "adaptive"
    assert response.json["adaptive"] == {"pushed": 0, "pulled": 0}
    ada, bob = signup(), signup()
    components.users.set_fanout_leaning(int(ada.id), "pull", dt.datetime.now(dt.UTC))
    components.users.set_fanout_leaning(int(bob.id), "pull", dt.datetime.now(dt.UTC))
    shown = client.get("/v1/admin/fanout", headers=operator_headers).json
    assert shown["adaptive"] == {"pushed": 0, "pulled": 2}


@pytest.mark.parametrize(
    "body",
    [
        {"mode": "sideways"},
        {"celebrity_threshold": 0},
        {"celebrity_threshold": "ten"},
        {"celebrity_threshold": {"$gt": 1}},
        {"mode": "read", "extra": 1},
    ],
)
def test_bad_settings_are_422_and_change_nothing(client, operator_headers, components, body):
    before = components.fanout_settings.read()
    response = client.put("/v1/admin/fanout", json=body, headers=operator_headers)
    assert response.status_code == 422 and "errors" in response.json
    assert components.fanout_settings.read() == before


def test_author_override(client, signup, operator_headers, components):
    bob = signup("bob")
    path = f"/v1/admin/users/{bob.id}/fanout"
    response = client.put(path, json={"strategy": "pull"}, headers=operator_headers)
    assert response.status_code == 200 and response.json == {"user_id": bob.id, "strategy": "pull"}
    assert components.users.get(int(bob.id))["fanout_override"] == "pull"
    assert components.sources.authors([int(bob.id)])[int(bob.id)][1] == "pull"
    bad = client.put(path, json={"strategy": "shove"}, headers=operator_headers)
    assert bad.status_code == 422
    missing = client.put(
        "/v1/admin/users/123456789/fanout", json={"strategy": "push"}, headers=operator_headers
    )
    assert missing.status_code == 404


def test_unauthenticated_bad_body_is_401_not_422(client):
    assert client.put("/v1/admin/fanout", json={"mode": 5}).status_code == 401
    assert client.post("/v1/posts", json={"text": ""}).status_code == 401
    assert client.get("/v1/timeline/home?limit=0").status_code == 401


def test_create_operator_command_on_a_real_mongodb(real_mongodb, capsys):
    server = real_mongodb
    assert cli.main(["create-operator", "ops_lead"]) == 0
    assert server.socialapp.users.find_one({"handle": "ops_lead"})["role"] == "operator"
    assert cli.main(["create-operator", "ops_lead"]) == 0  # idempotent
    assert server.socialapp.users.count_documents({"handle": "ops_lead"}) == 1
    assert "ops_lead" in capsys.readouterr().out


def test_commands_refuse_the_embedded_store(monkeypatch, capsys):
    monkeypatch.delenv("SOCIALAPP_MONGO_URI", raising=False)
    assert cli.main(["create-operator", "ops_lead"]) == 2
    assert "SOCIALAPP_MONGO_URI" in capsys.readouterr().err


def test_fanout_commands_change_the_settings_and_journal_the_command_line(real_mongodb, capsys):
    """`socialapp fanout` and `fanout-override` change what they name and journal it as made
    from the command line (no operator account): they used to fail once the change was made."""
    server = real_mongodb
    assert cli.main(["fanout", "--mode", "write", "--threshold", "7"]) == 0
    assert "mode=write" in capsys.readouterr().out
    c = bootstrap.build(Settings.from_env())
    author = accounts.register(c.users, c.passwords, c.ids, "ada", "correct horse")["_id"]
    assert cli.main(["fanout-override", str(author), "pull"]) == 0
    assert server.socialapp.users.find_one({"_id": author})["fanout_override"] == "pull"
    journal = list(server.socialapp.fanout_changes.find({}, sort=[("_id", 1)]))
    assert [(c["what"], c["after"]) for c in journal] == [
        ("mode", "write"), ("celebrity_threshold", 7), ("strategy", "pull"),
    ]  # fmt: skip
    assert {c["by_handle"] for c in journal} == {COMMAND_LINE}
    assert not any("by" in c for c in journal)
    assert cli.main(["fanout-override", "999", "pull"]) == 1  # no such user: nothing journaled
    assert server.socialapp.fanout_changes.count_documents({}) == 3
