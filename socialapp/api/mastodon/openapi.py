"""The Mastodon routes in /openapi.json, documented from the app's own url_map.

Every rule of a Mastodon blueprint becomes a path with its methods and path parameters, so a
route added later is listed even before it is described; ``documented`` adds a view's summary,
the parameters it reads and the statuses it answers with. Documenting changes nothing at run
time: the views keep their own parsing, errors and headers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from flask import Flask
from flask_smorest import Api

from socialapp.api.mastodon.parsing import Limit

TAG = "Mastodon API"
ERROR = "MastodonError"
BODY_TYPES = ("application/json", "application/x-www-form-urlencoded", "multipart/form-data")
BODY_NOTE = "Form-encoded or JSON; the same parameters are also read from the query string."
AUTHORIZED = {401: "No valid bearer token", 403: "The token does not grant the scope"}
NOT_FOUND = {404: "Record not found"}
BLOCKED = {403: "The token does not grant the scope, or a block stands between caller and author"}
INVALID = {422: "A parameter is invalid"}
LIMITED = {429: "Rate limited (Retry-After says when to retry)"}
MALFORMED_BODY = {400: "The body is not a JSON object", 413: "The body is over 64 KiB"}
LINK = {"Link": {"description": 'Mastodon paging: rel="next" and rel="prev"', "schema": {}}}
RATE_HEADERS = {
    name: {"description": f"{name} of the limit this call counts under", "schema": {}}
    for name in ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")
}


def documented(
    summary: str,
    ok: str,
    errors: Mapping[int, str] | None = None,
    parameters: type | list[dict] | None = None,
    body: type | None = None,
    scopes: tuple[str, ...] = (),
    paged: bool = False,
    media: str = "application/json",
    **extra,
) -> Callable:
    """Describe a Mastodon view for /openapi.json: ``ok`` is what a 200 answers, ``parameters``
    the query schema it parses (or OpenAPI parameters), ``body`` its body schema, ``scopes``
    those its token needs (one of them), ``media`` what it answers with (a page, an image)."""
    doc = dict(summary=summary, ok=ok, errors=errors or {}, body=body, scopes=scopes, media=media)
    if isinstance(parameters, type):
        parameters = [{"in": "query", "schema": parameters}]
    doc["parameters"] = parameters
    doc |= dict(paged=paged, extra=extra)

    def attach(view: Callable) -> Callable:
        view.mastodon_doc = doc
        return view

    return attach


def _responses(doc: dict) -> dict:
    json = doc["media"] == "application/json"
    ok = {"description": doc["ok"], "content": {doc["media"]: {"schema": {}}}}
    headers = {**(LINK if doc["paged"] else {}), **(RATE_HEADERS if 429 in doc["errors"] else {})}
    if headers:
        ok["headers"] = headers
    errors = dict(doc["errors"])
    for code, text in (MALFORMED_BODY if doc["body"] else {}).items():
        errors[code] = f"{errors[code]}; or: {text}" if code in errors else text
    page = {"text/html": {"schema": {"type": "string"}}}
    error = {"content": {"application/json": {"schema": ERROR}} if json else page}
    return {200: ok} | {code: {"description": text, **error} for code, text in errors.items()}


def _operation(view: Callable, rule_name: str) -> dict:
    doc = getattr(view, "mastodon_doc", None)
    if doc is None:  # a new route, listed before anyone describes it
        return {"tags": [TAG], "summary": rule_name, "responses": {200: {"description": "OK"}}}
    operation = {"tags": [TAG], "summary": doc["summary"], "responses": _responses(doc)}
    if doc["scopes"]:
        operation["security"] = [{"bearerAuth": []}]
        operation["description"] = "Token scope: " + " or ".join(doc["scopes"]) + "."
    if doc["parameters"]:
        operation["parameters"] = doc["parameters"]
    if doc["body"] is not None:
        content = {"schema": doc["body"]}
        operation["requestBody"] = {
            "required": True,
            "description": BODY_NOTE,
            "content": dict.fromkeys(BODY_TYPES, content),
        }
    return operation | doc["extra"]


def register(api: Api, app: Flask, blueprint_names: set[str]) -> None:
    """Add every rule of the blueprints named ``blueprint_names`` to ``api``'s spec."""
    api.register_field(Limit, "integer", None)
    api.spec.components.schema(
        ERROR,
        {
            "type": "object",
            "properties": {"error": {"type": "string"}, "error_description": {"type": "string"}},
            "required": ["error"],
        },
    )
    for rule in sorted(app.url_map.iter_rules(), key=lambda rule: rule.rule):
        if rule.endpoint.partition(".")[0] not in blueprint_names:
            continue
        view = app.view_functions[rule.endpoint]
        body = getattr(view, "mastodon_doc", {}).get("body")
        name = body and "Mastodon" + body.__name__.removesuffix("Schema")
        if name and name not in api.spec.components.schemas:  # not /v1's "TokenRequest"
            api.spec.components.schema(name, schema=body)
        methods = sorted(rule.methods - {"HEAD", "OPTIONS"})
        operations = {m.lower(): _operation(view, rule.endpoint) for m in methods}
        api.spec.path(rule=rule, operations=operations)
