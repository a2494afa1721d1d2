"""The authorization-code flow as a client and a person at the sign-in page go through it,
on Flask's test client (cookies kept): register an app, open the page, post the form."""

from __future__ import annotations

import base64
import hashlib
import html
import re
import secrets
from urllib.parse import parse_qs, urlencode, urlsplit

from mastodon import Mastodon

CALLBACK = "https://client.example/callback"
PASSWORD = "correct horse"


def new_app(client, scopes: str = "read write follow", redirect_uris: str = CALLBACK) -> dict:
    response = client.post(
        "/api/v1/apps",
        data={"client_name": "Example <App>", "redirect_uris": redirect_uris, "scopes": scopes},
    )
    assert response.status_code == 200, response.json
    return response.json


def pkce() -> tuple[str, str]:
    """A code verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode()).digest()
    return verifier, base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def authorize_url(app: dict, **params) -> str:
    query = {
        "response_type": "code",
        "client_id": app["client_id"],
        "redirect_uri": app["redirect_uris"][0],
        "scope": "read write",
        "state": "st@te/with ?&= and ünïcode",
        **params,
    }
    return "/oauth/authorize?" + urlencode({k: v for k, v in query.items() if v is not None})


def form_of(page) -> dict:
    """The hidden fields the page's form posts back (CSRF token included)."""
    return hidden_fields(page.get_data(as_text=True))


def hidden_fields(text: str) -> dict:
    """The hidden fields of the form in an HTML page (its CSRF token included)."""
    fields = re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', text)
    return {name: html.unescape(value) for name, value in fields}


def decide(client, url: str, decision: str = "approve", **login):
    """Open the page at ``url`` and post its form with ``decision`` and ``login``."""
    page = client.get(url)
    assert page.status_code == 200, page.get_data(as_text=True)
    return client.post("/oauth/authorize", data={**form_of(page), "decision": decision, **login})


def redirected(response) -> dict[str, str]:
    """The query of a redirect to the app, one value per name."""
    assert response.status_code == 302, response.get_data(as_text=True)
    query = parse_qs(urlsplit(response.headers["Location"]).query, keep_blank_values=True)
    return {name: values[0] for name, values in query.items()}


def code_for(client, app: dict, handle: str, challenge: str | None = None, **params) -> str:
    url = authorize_url(app, code_challenge=challenge, **params)
    if challenge:
        url += "&code_challenge_method=S256"
    answer = decide(client, url, username=handle, password=PASSWORD)
    return redirected(answer)["code"]


def exchange(client, app: dict, code: str, verifier: str | None = None, **extra):
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "client_id": app["client_id"],
        "client_secret": app["client_secret"],
        "redirect_uri": app["redirect_uris"][0],
        **({"code_verifier": verifier} if verifier else {}),
        **extra,
    }
    return client.post("/oauth/token", data=data)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def client_credentials(client, app: dict, scope: str = "read"):
    data = {"grant_type": "client_credentials", "scope": scope}
    data |= {"client_id": app["client_id"], "client_secret": app["client_secret"]}
    return client.post("/oauth/token", data=data)


def password_token(client, app: dict, handle: str, scope: str = "read"):
    data = {"grant_type": "password", "username": handle, "password": PASSWORD, "scope": scope}
    data |= {"client_id": app["client_id"], "client_secret": app["client_secret"]}
    return client.post("/oauth/token", data=data)


def mastodon_py(
    base: str,
    handles: list[str],
    scopes: tuple[str, ...] = ("read", "write"),
    version_check_mode: str = "none",
):
    """Mastodon.py, unmodified, signed in to the server at ``base`` as each of ``handles``
    (password grant) through one app it registers there: a client per handle
    (``version_check_mode`` "created": a method newer than the server's version raises)."""
    keys = Mastodon.create_app("tests", api_base_url=base, scopes=list(scopes))
    clients = []
    for handle in handles:
        clients.append(Mastodon(*keys, api_base_url=base, version_check_mode=version_check_mode))
        clients[-1].log_in(handle, PASSWORD, scopes=list(scopes), allow_http=True)
    return clients
