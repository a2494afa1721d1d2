"""What the hostile suites share: a valid body per operation, and every operation of the app's
own OpenAPI spec, so an endpoint added later is attacked too."""

from __future__ import annotations

OPERATORS = [
    {"$gt": ""},
    {"$ne": None},
    {"$where": "sleep(1000) || true"},
    {"$regex": ".*"},
    {"$in": ["ada", "bob"]},
    {"$exists": True},
    {"text": {"$ne": None}},
    ["$gt", ""],
]
# A valid body for each operation that takes one: each field is attacked in turn.
VALID_BODIES = {
    ("post", "/v1/users"): {"handle": "carol", "password": "long enough", "display_name": "C"},
    ("post", "/v1/auth/token"): {"handle": "ada", "password": "correct horse"},
    ("post", "/v1/posts"): {"text": "hello"},
    ("post", "/v1/posts/{post_id}/comments"): {"text": "hello"},
    ("put", "/v1/me/mutes/{user_id}"): {"duration": 60, "notifications": True},
    ("post", "/v1/me/lists"): {"title": "friends", "replies_policy": "list", "exclusive": False},
    ("patch", "/v1/me/lists/{list_id}"): {"title": "work", "replies_policy": "none"},
    ("put", "/v1/admin/fanout"): {"mode": "hybrid", "celebrity_threshold": 1000},
    ("put", "/v1/admin/users/{user_id}/fanout"): {"strategy": "auto"},
    ("post", "/v1/admin/seed"): {
        "users": 1,
        "celebrities": 0,
        "posts_per_user": 0,
        "seed": 0,
        "password": "long enough",
    },
}
JSON_ERROR_KEYS = {"code", "status", "message", "errors"}
OF_ANOTHER = ("/v1/me/mutes/", "/v1/me/blocks/")  # operations on another account than Ada


def call(client, world, method, template, **kwargs):
    """``method`` on ``template`` with its ids filled in, as Ada (as the operator on admin)."""
    path = template
    if template.startswith(OF_ANOTHER):  # of yourself: a 422 whatever the body
        path = path.replace("{user_id}", world["other"].id)
    for name, value in world["ids"].items():
        path = path.replace(name, value)
    operator = template.startswith("/v1/admin")
    headers = world["operator"] if operator else world["ada"].headers
    headers = {**headers, **kwargs.pop("headers", {})}
    return getattr(client, method)(path, headers=headers, **kwargs)


def resolve(spec, schema):
    if "$ref" in schema:
        return spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def operations(spec):
    """(method, path, operation) for every operation of the spec."""
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            if method != "parameters":  # path parameters, shared by the path's operations
                yield method, path, operation


def body_operations(spec):
    """(method, path, {field: property schema}) for every operation that takes a JSON body."""
    for method, path, operation in operations(spec):
        if "requestBody" in operation:
            content = operation["requestBody"]["content"]["application/json"]
            yield method, path, resolve(spec, content["schema"])["properties"]


def query_operations(spec):
    """(method, path, [parameter name]) for every operation that reads query parameters."""
    for method, path, names, _ in query_parameters(spec):
        yield method, path, names


def query_parameters(spec):
    """(method, path, [parameter name], {required parameter name}) for every operation that
    reads query parameters."""
    for method, path, operation in operations(spec):
        query = [p for p in operation.get("parameters", []) if p["in"] == "query"]
        if query:
            required = {p["name"] for p in query if p.get("required")}
            yield method, path, [p["name"] for p in query], required


def assert_json_error(response, status):
    assert response.status_code == status, (response.status_code, response.get_data()[:300])
    body = response.get_json()
    assert body["code"] == status and body["status"] and body["message"]
    assert set(body) <= JSON_ERROR_KEYS
    return body
