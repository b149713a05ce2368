"""The ERP pack's lines of ``tether doctor`` (``Pack.doctor``): is the ERP's HTTP API there, and
does a login work.

Reachability is ``me`` without a token (the demo ERP's ``GET /me``; Tryton's server version): an ERP answers 401; nothing answering, a gateway's
502–504, or an answer that is not the ERP API's is a failure naming ``TETHER_ERP_BASE_URL``. A login
needs a user: with ``TETHER_ERP_CHECK_USER`` and ``TETHER_ERP_CHECK_PASSWORD`` it logs in, reads
``/me`` and logs out again (the token is never printed); without them it says the login was not
tried. The demo ERP mounted in ``tether serve`` (no ``TETHER_ERP_BASE_URL``) is served by the server
itself: when no server runs there, that is said, not failed.
"""

from __future__ import annotations

from tether.pack import DoctorCheck
from tether.packs.erp.adapters import open_client
from tether.packs.erp.client import ErpRefused, ErpUnreachable, LoginExpired
from tether.packs.erp.port import ErpPort
from tether.packs.erp.settings import ErpPackSettings

WHAT = "ERP"
URL_FIX = "start the ERP, or set TETHER_ERP_BASE_URL to its API (e.g. http://erp.example:8000/erp)"
TRYTON_FIX = (
    "start Tryton (`tether tryton serve`), or set TETHER_ERP_BASE_URL to its server (e.g. http://tryton.example:8000/)"
)


async def erp_checks(settings: ErpPackSettings, public_url: str) -> list[DoctorCheck]:
    client = open_client(settings, public_url, timeout_s=min(settings.http_timeout_s, 10.0))
    base_url = client.base_url
    mounted = settings.base_url is None and settings.embedded and settings.kind == "demo"  # inside tether serve
    try:
        try:
            await client.me("")
        except LoginExpired:
            pass  # 401 without a token: an ERP answers
        except ErpUnreachable as exc:
            if mounted:
                detail = (
                    f"the demo ERP is mounted in tether serve at {base_url}; no server answers there now "
                    f"({exc.reason}), so it was not tried: start `tether serve` and run doctor again"
                )
                return [DoctorCheck(WHAT, True, detail)]
            fix = TRYTON_FIX if settings.kind == "tryton" else URL_FIX
            return [DoctorCheck(WHAT, False, f"nothing answers at {base_url} ({exc.reason})", fix)]
        except ErpRefused as exc:
            detail = f"{base_url} answers, but not as the ERP's API (GET /me: {exc.status})"
            return [DoctorCheck(WHAT, False, detail, "set TETHER_ERP_BASE_URL to the ERP's API, not another site")]
        return [await _login(client, settings, base_url)]
    finally:
        await client.aclose()


async def _login(client: ErpPort, settings: ErpPackSettings, base_url: str) -> DoctorCheck:
    user, password = settings.check_user, settings.check_password
    if not user or password is None:
        return DoctorCheck(
            WHAT,
            True,
            f"{base_url} answers; a login was not tried (TETHER_ERP_CHECK_USER and TETHER_ERP_CHECK_PASSWORD name a user to try)",
        )
    try:
        answer = await client.login(user, password.get_secret_value())
        token = str(answer.get("token") or "")
        if not token:
            detail = f"{base_url} answers, but its login of {user} returned no token"
            return DoctorCheck(WHAT, False, detail, "check that TETHER_ERP_BASE_URL is the ERP's API")
        me = await client.me(token)
        await client.logout(token)
    except (LoginExpired, ErpRefused) as exc:
        reason = f"{exc.status}: {exc.params.get('reason')}" if isinstance(exc, ErpRefused) else "401"
        return DoctorCheck(
            WHAT,
            False,
            f"{base_url} answers, but refused the login of {user} ({reason})",
            "correct TETHER_ERP_CHECK_USER / TETHER_ERP_CHECK_PASSWORD, or the user in the ERP",
        )
    except ErpUnreachable as exc:
        return DoctorCheck(WHAT, False, f"{base_url} stopped answering during the login ({exc.reason})", URL_FIX)
    forms = len(me.get("sAuthsId") or ())
    return DoctorCheck(WHAT, True, f"{base_url} answers; logged in as {user} ({forms} grant(s)) and out again")
