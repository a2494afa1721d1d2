"""The app answers ``ensure_sync`` from a function's code flags (Flask asks it of every hook
and view wrapper on every request) and leaves anything else to Flask."""

from __future__ import annotations

import functools

import pytest

from socialapp.app import App


def plain(value):
    return value


async def coroutine(value):
    return value


class Holder:
    def method(self, value):
        return value

    async def coroutine_method(self, value):
        return value


@pytest.fixture
def app(monkeypatch):
    app = App(__name__)
    monkeypatch.setattr(app, "async_to_sync", lambda func: ("wrapped", func))
    return app


def test_plain_functions_and_methods_are_given_back_as_they_are(app):
    holder = Holder()
    assert app.ensure_sync(plain) is plain
    bound = holder.method
    assert app.ensure_sync(bound) is bound
    assert app.ensure_sync(bound)(3) == 3


def test_coroutine_functions_and_methods_go_to_flask(app):
    holder = Holder()
    assert app.ensure_sync(coroutine) == ("wrapped", coroutine)
    bound = holder.coroutine_method
    assert app.ensure_sync(bound) == ("wrapped", bound)


def test_other_callables_get_flasks_answer(app):
    partial = functools.partial(coroutine, 1)
    assert app.ensure_sync(partial) == ("wrapped", partial)
    sync_partial = functools.partial(plain, 1)
    assert app.ensure_sync(sync_partial) is sync_partial
