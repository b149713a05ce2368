"""The ERP port: everything the ERP pack asks of an ERP, in one contract. The reader, the planner,
the tools, the form gate and the op queue talk to this and never know which ERP answers.

Two adapters implement it: ``client.ErpClient`` (the demo ERP's xlyEntry-style form API, seed 003)
and ``tryton_client.TrytonClient`` (Tryton's JSON-RPC). Another ERP (Odoo, ERPNext) is a third
class with these methods and the same errors; docs/erp.md "Connecting a real ERP" lists what each
must answer.

The contract, method by method (``token`` is the user's ERP credential, opaque to tether; it goes
to the ERP only, never into a log or an error):

- ``login(username, password)`` → ``{"token", "expiresAt", "user"}``; wrong credentials raise
  ``LoginExpired``. ``logout(token)``. ``me(token)`` → ``{"userId", "username", "name", "brandsId",
  "subsidiaryId", "sAuthsId": [granted form ids], "jurisdiction"}``: the ERP's own answer to who
  the token is and which forms its rights let them read.
- ``forms(token)`` → every form card ``{"formId" (digits), "name", "aliases", "description",
  "module", "view"}``; ``config(token, form_id)`` → ``{"formId", "name", "master": [field],
  "detail": {"fields": [field]} | None, "filters": [filter], "examinable", "writable",
  "billNoPrefix", "view"}`` in the user's language, a field being ``{"column", "label", "type"
  (text|integer|number|date|select), "options", "ref", "required", "readOnly", "maxLength"}`` and a
  filter ``{"name", "label", "type", "column", "op" (eq|like|gte|lte), "options"}``.
- ``read(token, form_id, params, page, page_size)`` → ``{"rows", "total"}`` with only the form's
  filters as ``params`` (tether whitelists them first); ``record(token, form_id, record_id)`` →
  ``{"master", "details"}``; an id the user cannot see raises ``ErpRefused(404)``.
- a bill's lines name their roles by the columns ``material_id`` (the item, a ref), ``qty``,
  ``unit_price`` and ``line_no`` (its place), whatever the ERP calls them: the diff, the approval
  policy's amounts and the offline planner read lines by these.
- ``config`` says how writes go: ``writable`` / ``examinable`` (the user's rights), and optionally
  ``executesOnConfirm`` (every op runs at once on the confirm: an ERP without a form of its own
  that picks a staged op up), ``billNoFilter`` (the filter a bill number is looked up by, default
  ``bill_no``), ``statusColumn`` (default ``status``) and ``examineSteps`` (status → ``{"action",
  "to"}``: what examining a record in that status does; without it examine is draft → examined).
- staging: ``stage(token, body)`` (the proposal: ``sId`` = the op id, ``opType``, ``targetFormId``,
  ``targetBillId``, ``payload``, ``baseVersion``…), ``staged(token, op)`` → ``{"status",
  "fingerprint", …}``, ``exec_staging(token, op, mode)`` (executes exactly once — a repeated call
  for an op already executed returns that first outcome — and only what ``fingerprint_of(op)``
  binds: the values tether holds, confirmed and approved), ``revise_staging``, ``cancel_staging(token, op)``.
  An ERP with staging of its own (the demo ERP) compares its staged row's fingerprint; an ERP
  without (Tryton) stages nothing and executes the op's own values, bound to the record's version.
- errors: ``LoginExpired`` (the ERP refused the token), ``ErpUnreachable`` (an outage, counted by
  ``breaker``), ``ErpRefused(status, message)`` (any other refusal).
"""

from __future__ import annotations

from typing import Any, Protocol

from tether.pack import Op
from tether.packs.erp.breaker import CircuitBreaker


class ErpPort(Protocol):
    breaker: CircuitBreaker
    base_url: str

    async def aclose(self) -> None: ...

    async def login(self, username: str, password: str) -> dict[str, Any]: ...

    async def logout(self, token: str) -> dict[str, Any]: ...

    async def me(self, token: str) -> dict[str, Any]: ...

    async def forms(self, token: str) -> list[dict[str, Any]]: ...

    async def config(self, token: str, form_id: str) -> dict[str, Any]: ...

    async def read(
        self, token: str, form_id: str, params: dict[str, Any], page: int, page_size: int
    ) -> dict[str, Any]: ...

    async def record(self, token: str, form_id: str, record_id: str) -> dict[str, Any]: ...

    async def stage(self, token: str, body: dict[str, Any]) -> dict[str, Any]: ...

    async def staged(self, token: str, op: Op) -> dict[str, Any]: ...

    async def exec_staging(self, token: str, op: Op, mode: str) -> dict[str, Any]: ...

    async def revise_staging(self, token: str, op_id: str, body: dict[str, Any]) -> dict[str, Any]: ...

    async def cancel_staging(self, token: str, op: Op) -> dict[str, Any]: ...
