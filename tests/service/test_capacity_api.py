"""GET /v1/admin/capacity: the planner's answer for operators, its refusals, and who may
ask. The figures themselves are held to the workload report in tests/unit/test_capacity.py."""

import json
from urllib.parse import urlencode

import pytest

from tests.conftest import with_operator

NETWORK = {"users": "2000000", "posts_per_user_day": "2", "reads_per_user_day": "20"}


@pytest.fixture
def settings(settings):
    return with_operator(settings)


def ask(client, headers, **query):
    return client.get(f"/v1/admin/capacity?{urlencode(query)}", headers=headers)


def test_an_operator_gets_the_plan_with_its_sources(client, operator_headers, components):
    answer = ask(client, operator_headers, **NETWORK, mode="write", threshold="500")

    assert answer.status_code == 200, answer.json
    plan = answer.json
    assert plan["inputs"]["users"] == 2_000_000 and plan["inputs"]["mode"] == "write"
    assert plan["inputs"]["timeline_cap"] == components.settings.timeline_cap  # the default
    assert plan["pulled_share_of_follows"] == 0  # write mode pushes every follow
    per_post = plan["deliveries_per_post"]
    assert plan["deliveries_per_second"]["mean"] == pytest.approx(2_000_000 * 2 / 86_400 * per_post)
    assert plan["deliveries_per_second"]["peak"] == pytest.approx(
        3 * plan["deliveries_per_second"]["mean"]
    )
    assert plan["redis_memory_bytes"]["total"] > plan["redis_memory_bytes"]["homes"] > 0
    assert min(plan["cores"].values()) >= 1
    # home entries at the compact encoding's bytes the benchmark measured, not the older
    # workload runs' sorted-set members
    entry = plan["unit_costs"]["redis_bytes_per_home_entry"]
    assert entry["source"] == (
        "reports/benchmark/figures.json: memory.bytes_per_entry_delivered_home"
    )
    assert entry["value"] < 20


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("users", "-1"),
        ("users", "nan"),
        ("users", "1e30"),
        ("users", "2.5"),
        ("tail", "inf"),
        ("tail", "1"),
        ("days", "1e300"),
        ("posts_per_user_day", "1_000"),
        ("mode", "all"),
    ],
)
def test_an_impossible_input_is_a_422_naming_it(client, operator_headers, name, value):
    answer = ask(client, operator_headers, **{**NETWORK, name: value})

    assert answer.status_code == 422
    assert list(answer.json["errors"]["query"]) == [name], answer.json


def test_an_impossible_combination_is_a_400_naming_the_input(client, operator_headers):
    answer = ask(client, operator_headers, **{**NETWORK, "users": "10", "followees": "12"})

    assert answer.status_code == 400
    assert answer.json["message"].startswith("followees"), answer.json


def test_a_missing_or_unknown_input_is_refused(client, operator_headers):
    missing = ask(client, operator_headers, users="10")
    unknown = ask(client, operator_headers, **NETWORK, servers="3")

    assert missing.status_code == 422 and "posts_per_user_day" in missing.json["errors"]["query"]
    assert unknown.status_code == 422 and "servers" in json.dumps(unknown.json)


def test_only_operators_may_plan(client, signup):
    plain = signup()

    assert ask(client, plain.headers, **NETWORK).status_code == 403
    assert ask(client, {}, **NETWORK).status_code == 401
