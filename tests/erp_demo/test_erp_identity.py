"""Login, logout, /me, token expiry and revocation; 401 for every bad token."""

from __future__ import annotations

import sqlalchemy as sa

from tests.erp_demo.conftest import Erp
from tether.erp_demo import ErpDemo, ErpSettings, facts
from tether.erp_demo.auth import token_hash
from tether.erp_demo.schema import erp_token, erp_user

EXPIRED = {"code": -2, "msg": "登录已过期，请重新登录"}


def test_login_me_logout(erp: Erp) -> None:
    r = erp.client.post("/login", json={"username": "sales01", "password": facts.PASSWORD})
    assert r.status_code == 200
    body = r.json()
    token = body["token"]
    assert body["code"] == 1 and body["expiresAt"].endswith("Z") and len(token) >= 40
    assert body["user"]["userId"] == "sales01"
    for header in (token, f"Bearer {token}", f"bearer {token}"):
        me = erp.client.get("/me", headers={"Authorization": header})
        assert me.status_code == 200, header
    me = me.json()
    assert me == {
        "code": 1,
        "userId": "sales01",
        "username": "sales01",
        "name": facts.USERS["sales01"][0],
        "brandsId": 1,
        "subsidiaryId": 1,
        "sAuthsId": list(facts.SALES_FORMS),
        "jurisdiction": "own",
    }
    with erp.demo.engine.connect() as conn:
        stored = conn.execute(sa.select(erp_token.c.token_hash)).scalars().all()
        password = conn.execute(sa.select(erp_user.c.password_hash).where(erp_user.c.id == "sales01")).scalar_one()
    assert token_hash(token) in stored and token not in stored  # only the hash is kept
    assert facts.PASSWORD not in password and password.startswith("pbkdf2_sha256$")
    assert erp.client.post("/logout", headers={"Authorization": token}).status_code == 200
    r = erp.client.get("/me", headers={"Authorization": token})
    assert r.status_code == 401 and r.json() == EXPIRED
    # another login of the same user is unaffected by the revocation of the first
    assert erp.get("sales01", "/me").status_code == 200


def test_bad_credentials_and_tokens(erp: Erp) -> None:
    for body in ({"username": "sales01", "password": "wrong"}, {"username": "nobody", "password": "666666"}):
        r = erp.client.post("/login", json=body)
        assert r.status_code == 401 and r.json()["code"] == -1
    r = erp.client.post("/login", json={"username": "sales01"})
    assert r.status_code == 400 and "required" in r.json()["msg"]
    r = erp.client.post("/login", json=["x"])
    assert r.status_code == 422 and r.json()["code"] == -1
    for headers in (
        {},
        {"Authorization": ""},
        {"Authorization": "Bearer "},
        {"Authorization": "nonsense"},
        {"Authorization": "x" * 5000},
    ):
        for method, path in (
            ("GET", "/me"),
            ("GET", "/forms"),
            ("POST", "/getBusinessDataByFormcustomId"),
            ("POST", "/logout"),
        ):
            r = erp.client.request(
                method, path, headers=headers, json={"sFormId": "1001"} if method == "POST" else None
            )
            assert r.status_code == 401 and r.json() == EXPIRED, (headers, path)


def test_expired_token(db_url: str) -> None:
    demo = ErpDemo(ErpSettings(database_url=db_url, seed_scale=0.1, token_ttl_s=1))
    demo.prepare()
    try:
        erp = Erp(demo)
        token = erp.token("admin")
        with demo.engine.begin() as conn:  # a second later, as far as the ERP can tell
            conn.execute(erp_token.update().values(expires_at=erp_token.c.created_at))
        r = erp.client.get("/me", headers={"Authorization": token})
        assert r.status_code == 401 and r.json() == EXPIRED
    finally:
        demo.close()


def test_users_exactly_as_documented(shared_erp: Erp) -> None:
    for user, (name, brand, auths, jurisdiction) in facts.USERS.items():
        me = shared_erp.get(user, "/me").json()
        assert (me["name"], me["brandsId"], tuple(me["sAuthsId"]), me["jurisdiction"]) == (
            name,
            brand,
            auths,
            jurisdiction,
        )
