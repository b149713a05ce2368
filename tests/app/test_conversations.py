"""Conversations over HTTP (seed 003 §3/§14): a user's named sessions, newest first, searched by
title, renamed and archived — and what another user or a broken client can and cannot do to them.
One server of its own, so the lists here hold only what these tests create."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.app.conftest import TetherServer, get_session, make_server

pytestmark = pytest.mark.slow
BASE = "/api/agent/sessions"
SUMMARY_KEYS = {"sessionId", "status", "title", "archived", "writeState", "createdAt", "updatedAt"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TetherServer]:
    s = make_server(tmp_path_factory.mktemp("conversations")).start()
    try:
        yield s
    finally:
        s.stop()
    s.assert_no_server_errors()


@pytest.fixture(scope="module")
def alice(server: TetherServer) -> Iterator[httpx.Client]:
    with server.client("dev-alice") as c:
        yield c


@pytest.fixture(scope="module")
def bob(server: TetherServer) -> Iterator[httpx.Client]:
    with server.client("dev-bob") as c:
        yield c


def create(client: httpx.Client, label: str) -> str:
    r = client.post(BASE, json={"message": f"slowly label={label}"})
    assert r.status_code == 200 and r.json()["status"] == "SUCCEEDED", r.text
    assert r.json()["archived"] is False
    sid: str = r.json()["sessionId"]
    return sid


def patch(client: httpx.Client, sid: str, **body: Any) -> httpx.Response:
    return client.patch(f"{BASE}/{sid}", json=body)


def listed(client: httpx.Client, **params: Any) -> list[str]:
    r = client.get(BASE, params={"limit": 200, **params})
    assert r.status_code == 200, r.text
    assert all(item.keys() == SUMMARY_KEYS for item in r.json()["items"])
    return [item["sessionId"] for item in r.json()["items"]]


def test_conversations_are_renamed_searched_and_archived(alice: httpx.Client) -> None:
    first, second, third = (create(alice, f"conv{i}") for i in range(3))
    assert listed(alice) == [third, second, first]

    r = patch(alice, first, title="  100% Précis _draft_  ")
    assert r.status_code == 200, r.text
    assert r.json().keys() == SUMMARY_KEYS
    assert (r.json()["title"], r.json()["archived"]) == ("100% Précis _draft_", False)
    assert listed(alice) == [third, second, first]  # a rename does not move it up
    view = get_session(alice, first)
    assert (view["title"], view["archived"]) == ("100% Précis _draft_", False)

    assert patch(alice, second, title="Q3 贵金属 review").status_code == 200
    assert listed(alice, q="PRÉCIS") == [first]
    assert listed(alice, q="%") == [first] and listed(alice, q="_draft_") == [first]
    assert listed(alice, q="_") == [first]  # "_" is an underscore, not any character
    assert listed(alice, q="贵金属") == [second]
    assert listed(alice, q="no such title") == []

    r = patch(alice, second, archived=True)
    assert r.status_code == 200 and r.json()["archived"] is True and r.json()["title"] == "Q3 贵金属 review"
    assert listed(alice) == [third, first]
    assert listed(alice, archived="true") == [second]
    assert listed(alice, archived="all") == [third, second, first]
    assert listed(alice, q="贵金属") == [] and listed(alice, q="贵金属", archived="all") == [second]
    assert get_session(alice, second)["archived"] is True

    # a message to an archived conversation works and keeps it archived; updatedAt moves it up
    r = alice.post(f"{BASE}/{second}/messages", json={"message": "slowly label=again"})
    assert r.status_code == 200 and r.json()["archived"] is True and r.json()["title"] == "Q3 贵金属 review"
    assert listed(alice, archived="all")[0] == second

    r = patch(alice, second, archived=False, title="back")
    assert r.status_code == 200 and (r.json()["title"], r.json()["archived"]) == ("back", False)
    assert listed(alice) == [second, third, first]


def test_another_user_cannot_rename_archive_or_list_yours(alice: httpx.Client, bob: httpx.Client) -> None:
    sid = create(alice, "private")
    assert patch(alice, sid, title="alice's secret plan").status_code == 200
    before = get_session(alice, sid)
    for body in ({"title": "mine now"}, {"archived": True}, {"title": "x", "archived": True}):
        r = patch(bob, sid, **body)
        assert r.status_code == 404 and "error" in r.json(), r.text
    assert sid not in listed(bob, archived="all") and listed(bob, q="secret", archived="all") == []
    assert patch(bob, "ses-does-not-exist", title="x").status_code == 404
    assert get_session(alice, sid) == before
    r = bob.get(f"{BASE}/{sid}")
    assert r.status_code == 404


def test_bad_bodies_and_parameters_are_422_and_change_nothing(alice: httpx.Client) -> None:
    sid = create(alice, "target")
    before = get_session(alice, sid)
    for body, field in (
        ({}, "body"),
        ({"title": ""}, "title"),
        ({"title": "   "}, "title"),
        ({"title": "x" * 201}, "title"),
        ({"title": "a\u0000b"}, "title"),
        ({"title": 5}, "title"),
        ({"title": None}, "title"),
        ({"title": ["a"]}, "title"),
        ({"archived": "yes"}, "archived"),
        ({"archived": 1}, "archived"),
        ({"archived": None}, "archived"),
        ({"title": "ok", "archived": "true"}, "archived"),
        ({"title": "ok", "owner": "bob"}, "owner"),
    ):
        r = patch(alice, sid, **body)
        assert r.status_code == 422 and r.json()["field"] == field, (body, r.status_code, r.text)
    for raw in (b'{"title": "\\ud800"}', b"{", b"[]", b'"title"', b"\xff\xfe"):
        r = alice.patch(f"{BASE}/{sid}", content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 422 and "field" in r.json(), (raw, r.status_code, r.text)
    assert patch(alice, sid, title="x" * 200).status_code == 200
    assert patch(alice, sid, title=before["title"]).status_code == 200
    assert get_session(alice, sid) == before

    for params, field in (
        ({"archived": "maybe"}, "archived"),
        ({"archived": "1"}, "archived"),
        ({"q": "a\u0000"}, "q"),
        ({"q": "x" * 201}, "q"),
    ):
        r = alice.get(BASE, params=params)
        assert r.status_code == 422 and r.json()["field"] == field, (params, r.text)
    assert alice.patch(f"{BASE}/ses-%00x", json={"title": "x"}).status_code == 404
