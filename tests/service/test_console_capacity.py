"""The console's capacity panel: the planner's answer as a fragment for htmx or a page
without JavaScript, a refused input as a 400 page naming it, and strangers sent away."""

import pytest

from tests.conftest import with_operator
from tests.service.test_console import sign_in

NETWORK = "users=2000000&posts_per_user_day=2&reads_per_user_day=20"


@pytest.fixture
def settings(settings):
    return with_operator(settings)


def test_the_panel_plans_refuses_by_name_and_is_for_operators(client):
    assert client.get(f"/admin/capacity?{NETWORK}").status_code == 303  # sign in first
    assert sign_in(client).status_code == 303
    home = client.get("/admin")
    fragment = client.get(f"/admin/capacity?{NETWORK}&mode=write", headers={"HX-Request": "true"})
    page = client.get(f"/admin/capacity?{NETWORK}")
    refused = client.get(f"/admin/capacity?{NETWORK}&tail=nan")
    unknown = client.get(f"/admin/capacity?{NETWORK}&servers=3")

    assert 'id="capacity-form"' in home.text
    assert fragment.status_code == 200 and "<html" not in fragment.text
    assert "Redis memory" in fragment.text and "reports/workload/figures.json" in fragment.text
    assert page.status_code == 200 and 'value="2000000"' in page.text
    assert refused.status_code == 400 and "tail" in refused.text
    assert unknown.status_code == 422 and "servers" in unknown.text
