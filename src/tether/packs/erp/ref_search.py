"""The search box behind a form card's ``ref`` field (a customer, a material, a source bill):
``GET /api/erp/forms/{form_id}/refs/{column}?q=`` lists the referenced form's records that match,
read from the ERP *as the user* — with their token, so the ERP's tenant (brand + subsidiary) and
row scope apply (a salesperson who sees only their own customers finds only those).

It must never become a way round the form grants: the form asked about must be granted to the
user and the column must be one of its ``ref`` fields; anything else is the same 404 an unknown
form gets. The referenced form itself need not be granted (as in ``refs``: choosing the material of
a quotation the user may write is part of writing it), so only the fields a person chooses by are
returned — id, code or bill number, name, spec and unit, a material's list price — never the rest
of the record.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query

from tether.pack import Identity, IdentityDep, NotFound, ToolError, Unauthorized
from tether.packs.erp.authz import FORM_ID
from tether.packs.erp.client import LoginExpired
from tether.packs.erp.port import ErpPort
from tether.packs.erp.schema import detail_fields, master_fields

MAX_RESULTS = 20
# the referenced form's filters a typed text is tried against, in the order their matches are listed
SEARCHED = ("code", "bill_no", "name", "customer_name", "spec")
SHOWN = ("id", "code", "bill_no", "name", "short_name", "customer_name", "bill_date", "spec", "unit", "price")
_EXACT = ("code", "bill_no")  # identifiers: matched in upper case (C0001, QT202612-0001)


def ref_field(config: dict[str, Any], column: str) -> dict[str, Any] | None:
    """The form's ``ref`` field of that column, master or detail line."""
    for f in [*master_fields(config), *detail_fields(config)]:
        if f.get("column") == column and f.get("type") == "ref" and f.get("ref"):
            return f
    return None


def candidate(row: dict[str, Any]) -> dict[str, Any]:
    """A record as the search box shows it; ``value`` is what the form sends (code, bill number or id),
    which the server resolves again on submit as it resolves anything typed."""
    shown = {k: row[k] for k in SHOWN if row.get(k) not in (None, "")}
    return {"value": str(row.get("code") or row.get("bill_no") or row.get("id")), **shown}


async def search(client: ErpPort, token: str, ref_form: str, text: str, limit: int) -> list[dict[str, Any]]:
    """Records of ``ref_form`` the user can see matching ``text`` by code, bill number, name or spec
    (an empty text: the first ones in the form's order)."""
    config = await client.config(token, ref_form)
    filters = {str(f["name"]) for f in config.get("filters") or []}
    wanted = [name for name in SEARCHED if name in filters] if text else []
    params = [{name: text.upper() if name in _EXACT else text} for name in wanted] or [{}]
    pages = await asyncio.gather(*(client.read(token, ref_form, p, 1, limit) for p in params))
    seen: set[str] = set()
    found: list[dict[str, Any]] = []
    for page in pages:
        for row in page["rows"]:
            key = str(row.get("id"))
            if key not in seen:
                seen.add(key)
                found.append(candidate(row))
    return found[:limit]


def _refusal(form_id: str) -> NotFound:
    return NotFound(f"no such form or no access: {form_id[:40]!r}")


async def search_as(client: ErpPort, who: Identity, form_id: str, column: str, text: str, limit: int) -> dict[str, Any]:
    if not who.credential:
        raise Unauthorized("an ERP login is needed to search the ERP's records")
    if not FORM_ID.match(form_id) or form_id not in who.grants:
        raise _refusal(form_id)
    try:
        config = await client.config(who.credential, form_id)
        field = ref_field(config, column)
        if field is None:
            raise NotFound(f"{config.get('name') or form_id} has no reference field {column[:40]!r}")
        found = await search(client, who.credential, str(field["ref"]), text, limit)
    except LoginExpired:
        raise Unauthorized("the ERP login has expired; log in again") from None
    except ToolError as exc:  # the ERP is down or refused: an upstream failure, not the caller's
        raise HTTPException(503, f"the ERP could not answer the search: {exc.message}", {"Retry-After": "5"}) from None
    return {"formId": form_id, "column": column, "ref": field["ref"], "q": text, "results": found}


def build_ref_router(client: ErpPort) -> APIRouter:
    router = APIRouter(prefix="/api/erp", tags=["erp"])

    @router.get(
        "/forms/{form_id}/refs/{column}",
        summary="Search the records a form's reference field may name, as the caller (their tenant and row scope)",
    )
    async def search_refs(
        form_id: str,
        column: str,
        who: IdentityDep,
        q: Annotated[str, Query(max_length=100, description="code, bill number, name or spec")] = "",
        limit: Annotated[int, Query(ge=1, le=MAX_RESULTS)] = 8,
    ) -> dict[str, Any]:
        return await search_as(client, who, form_id, column, q.strip(), limit)

    return router
