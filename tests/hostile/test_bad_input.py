"""Hostile and malformed input on every route: a JSON error, never a 500, nothing changed."""

from tests.service.test_ops import CONTRACT

BAD_IDS = ["0", "-1", "abc", "1e5", "١٢٣", "99999999999999999999", "%00", "12 3", "$gt"]
BAD_BODIES = [
    ("{not json", "application/json"),
    ("[]", "application/json"),
    ('"text"', "application/json"),
    ("null", "application/json"),
    ('{"text": {"$gt": ""}}', "application/json"),
    ('{"text": "\\ud800"}', "application/json"),
    ('{"text": "a\\u0000b"}', "application/json"),
    ('{"text": ' + "1" * 400 + "}", "application/json"),
    ("text=hello", "application/x-www-form-urlencoded"),
    ("\xff\xfe", "application/json"),
]
BAD_TOKENS = ["Bearer", "Bearer ", "Basic abc", "Bearer a.b.c", "Bearer " + "x" * 5000, "bearer"]


def routes(ids):
    """Every route that takes an id, with each bad id in its place."""
    for path, methods in CONTRACT.items():
        if "{" not in path:
            continue
        for raw in ids:
            concrete = path.replace("{user_id}", raw).replace("{post_id}", raw)
            for method in sorted(methods):
                yield method, concrete


def assert_json_error(response, allowed=range(400, 500)):
    assert response.status_code in allowed, (response.status_code, response.get_data()[:200])
    body = response.get_json()
    assert body["code"] == response.status_code
    assert body["status"] and body["message"]


def test_malformed_ids_are_client_errors(client, signup, state):
    ada = signup("ada")
    before = state()
    for method, path in routes(BAD_IDS):
        response = getattr(client, method)(path, headers=ada.headers, json={"text": "x"})
        assert_json_error(response)
    assert state() == before


def test_malformed_bodies_are_400_or_422(client, signup, state):
    ada = signup("ada")
    before = state()
    for body, content_type in BAD_BODIES:
        for path in ("/v1/users", "/v1/auth/token", "/v1/posts"):
            response = client.post(
                path, data=body.encode("utf-8", "surrogatepass"), headers=ada.headers,
                content_type=content_type,
            )  # fmt: skip
            assert_json_error(response, allowed=(400, 422))
    assert state() == before


def test_bad_tokens_are_401_everywhere(client, state):
    before = state()
    for token in BAD_TOKENS:
        for path, method in [
            ("/v1/posts", "post"),
            ("/v1/timeline/home", "get"),
            ("/v1/me/following/1", "put"),
            ("/v1/admin/fanout", "get"),
        ]:
            response = getattr(client, method)(path, headers={"Authorization": token}, json={})
            assert_json_error(response, allowed=(401,))
    assert state() == before


def test_bad_query_parameters_are_422(client, signup):
    ada = signup("ada")
    for query in ("limit=0", "limit=101", "limit=x", "max_id=abc", "since_id=-3", "foo=1"):
        response = client.get(f"/v1/timeline/home?{query}", headers=ada.headers)
        assert_json_error(response, allowed=(422,))
        assert client.get(f"/v1/users/{ada.id}/posts?{query}").status_code in (200, 422)
        for path in ("/v1/timelines/public", "/v1/tags/cats/timeline"):
            assert_json_error(client.get(f"{path}?{query}"), allowed=(422,))
    # A hashtag timeline's more tags: hundreds of names, no tag, an operator, a key's brackets.
    for query in (
        "any=a&" * 300,
        "all=%00",
        "none=" + "a" * 101,
        "any=",
        "all=$gt",
        "none=a%20b",
        "any=%23cats",
        "all[$ne]=a",
        "any=a&any=b&any=c&any=d&any=e",
    ):
        assert_json_error(client.get(f"/v1/tags/cats/timeline?{query}"), allowed=(422,))
