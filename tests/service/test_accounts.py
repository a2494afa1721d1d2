import concurrent.futures
import threading
import time

import jwt

from socialapp.services import accounts
from socialapp.stores.handles import HandleStore


def test_sign_up_returns_the_user(client):
    response = client.post(
        "/v1/users", json={"handle": "ada", "password": "s3cret-pass", "display_name": "Ada L."}
    )
    assert response.status_code == 201
    user = response.json
    assert user["handle"] == "ada"
    assert user["display_name"] == "Ada L."
    assert isinstance(user["id"], str)
    assert (user["followers_count"], user["following_count"], user["post_count"]) == (0, 0, 0)
    assert user["created_at"].endswith("+00:00") or user["created_at"].endswith("Z")
    assert "password" not in user and "password_hash" not in user
    assert client.get(f"/v1/users/{user['id']}").json == user


def test_display_name_defaults_to_handle(client):
    response = client.post("/v1/users", json={"handle": "bob", "password": "s3cret-pass"})
    assert response.json["display_name"] == "bob"


def test_taken_handle_is_409(client):
    client.post("/v1/users", json={"handle": "ada", "password": "s3cret-pass"})
    response = client.post("/v1/users", json={"handle": "ada", "password": "other-pass"})
    assert response.status_code == 409
    assert response.json["code"] == 409 and response.json["status"] == "Conflict"


def test_sign_ups_racing_for_one_handle_make_one_account(app, components):
    """Sign-ups for one handle at once: one is made, each other gets the taken error, and
    no claim or account is left half-made."""
    barrier = threading.Barrier(6)

    def sign_up(n: int):
        barrier.wait()
        body = {"handle": "ada", "password": f"s3cret-pass-{n}"}
        response = app.test_client().post("/v1/users", json=body)
        return response.status_code, response.json

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(sign_up, range(6)))

    assert sorted(status for status, _ in answers) == [201, 409, 409, 409, 409, 409]
    made = next(body for status, body in answers if status == 201)
    assert all(body["status"] == "Conflict" for status, body in answers if status == 409)
    assert components.users.by_handle("ada")["_id"] == int(made["id"])
    assert components.db.users.count_documents({"handle": "ada"}) == 1
    assert list(components.db.handles.find({}, projection={"claimed_at": 0})) == [
        {"_id": "ada", "user_id": int(made["id"])}
    ]


def test_the_operator_of_a_process_starting_beside_another_is_the_others(components, settings):
    """Two processes making the operator account at once: the one whose claim came second
    returns the account the first makes, or None if none is made."""
    handles = HandleStore(components.db, settings)
    assert handles.claim("ops", 42) is None  # the other process, before its account
    ensure = accounts.ensure_operator
    c = components
    assert ensure(c.users, c.passwords, c.ids, "ops", "s3cret-pass", within=0.2) is None
    assert c.users.by_handle("ops") is None and handles.holds("ops", 42)

    handles.release("ops", 42)  # that process failed: the next start makes it
    made = ensure(c.users, c.passwords, c.ids, "ops", "s3cret-pass")
    assert made["role"] == "operator" and handles.holds("ops", made["_id"])


def test_password_is_stored_as_an_argon2_hash(client, components):
    client.post("/v1/users", json={"handle": "ada", "password": "s3cret-pass"})
    stored = components.users.by_handle("ada")["password_hash"]
    assert stored.startswith("$argon2id$") and "s3cret-pass" not in stored


def test_token_for_right_password_authenticates(client, signup):
    ada = signup("ada")
    token = client.post("/v1/auth/token", json={"handle": "ada", "password": "correct horse"})
    assert token.status_code == 200
    assert token.json["token_type"] == "bearer"
    assert token.json["expires_in"] > 0
    assert ada.headers["Authorization"].startswith("Bearer ")


def test_wrong_password_and_unknown_handle_get_the_same_401(client, signup):
    signup("ada")
    wrong = client.post("/v1/auth/token", json={"handle": "ada", "password": "not it at all"})
    unknown = client.post("/v1/auth/token", json={"handle": "nobody", "password": "whatever1"})
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json == unknown.json


def test_unknown_and_malformed_user_ids_are_404(client):
    for user_id in ("123456789", "not-an-id", "-1", "99999999999999999999"):
        response = client.get(f"/v1/users/{user_id}")
        assert response.status_code == 404, user_id
        assert response.json["code"] == 404


def test_expired_and_forged_tokens_are_rejected(app, components):
    tokens = components.tokens
    user_id = 42
    expired = jwt.encode(
        {"sub": str(user_id), "iat": 0, "exp": int(time.time()) - 10, "iss": "socialapp"},
        app.config["SECRET_KEY"],
        algorithm="HS256",
    )
    forged = jwt.encode(
        {"sub": str(user_id), "iat": 0, "exp": int(time.time()) + 60, "iss": "socialapp"},
        "some other key that is long enough to sign",
        algorithm="HS256",
    )
    unsigned = jwt.encode(
        {"sub": str(user_id), "iat": 0, "exp": int(time.time()) + 60, "iss": "socialapp"},
        None,
        algorithm="none",
    )
    assert tokens.user_id(tokens.issue(user_id)) == user_id
    for token in (expired, forged, unsigned, "garbage", ""):
        try:
            tokens.user_id(token)
        except Exception as error:
            assert type(error).__name__ == "InvalidToken"
        else:
            raise AssertionError(f"accepted {token!r}")
