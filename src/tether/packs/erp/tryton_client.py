"""The ERP port on Tryton (``port.py``'s contract), over Tryton's own JSON-RPC (``tryton_rpc.py``).

Every call runs in the caller's Tryton session — the token tether holds *is* the session Tryton's
login gave, sent as ``Authorization: Session <token>`` — so Tryton's groups, ``ir.model.access`` and record rules
decide what is read, never an administrator's. A form is a Tryton model (``tryton_forms.FORMS``)
and it is granted when the user's groups may read it (``ir.model.access.get_access``); its id is
the model's ``ir.model`` id. Labels, types and options are Tryton's ``fields_get`` in the user's
language.

Writes (``tryton_writes.py``): the sale form is writable where the user's groups may create and
write sales; a proposal stages nothing in Tryton, and the confirm executes the op's own values in
the user's session, exactly once, bound to the record's version.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from typing import Any

from tether.pack import ConfigError, Op, ToolError
from tether.packs.erp import messages
from tether.packs.erp.breaker import CircuitBreaker
from tether.packs.erp.client import ErpRefused, ErpUnreachable, LoginExpired
from tether.packs.erp.tryton_forms import (
    BY_MODEL,
    FORMS,
    LINE_COLUMNS,
    ModelForm,
    add_aliases,
    domain_of,
    field_meta,
    filters_of,
    flatten,
)
from tether.packs.erp.tryton_forms import read_fields as fields_to_read
from tether.packs.erp.tryton_rpc import (
    RpcConcurrent,
    RpcFailed,
    RpcRateLimited,
    RpcUnauthorised,
    RpcUnreachable,
    RpcUserError,
    TrytonRpc,
    TrytonSession,
)
from tether.packs.erp.tryton_writes import TrytonWrites

RIGHTS = {"create": "create", "update": "write", "examine": "write", "delete": "delete"}
_MAX_CACHED = 4096


class TrytonClient:
    """The ERP port on one Tryton database."""

    def __init__(
        self,
        base_url: str,
        database: str,
        language: str = "zh_CN",
        timeout_s: float = 15.0,
        metadata_ttl_s: float = 300.0,
        breaker: CircuitBreaker | None = None,
        web_url: str | None = None,
        approvers: dict[str, str] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.database = database
        self.language = language
        self.web_url = web_url
        self.breaker = breaker or CircuitBreaker()
        self.approvers = approvers or {}  # Tryton group (module.xml_id) → the approval grant its members hold
        self._group_ids: dict[str, int | None] = {}
        self._rpc = TrytonRpc(self.base_url, database, timeout_s)
        self._ttl = metadata_ttl_s
        # per language: model → its ir.model row (the id is every user's, the name is in their language)
        self._models: dict[str, tuple[float, dict[str, dict[str, Any]]]] = {}
        self._specs: dict[tuple[str, str], tuple[float, dict[str, dict[str, Any]]]] = {}
        self._contexts: dict[str, tuple[float, dict[str, Any]]] = {}  # a session's Tryton context (company…)
        self._languages: tuple[float, list[str]] | None = None
        self._writes = TrytonWrites(self._call, self._all_fields, self.link)

    async def aclose(self) -> None:
        await self._rpc.aclose()

    # ---- the one place Tryton's answers become the port's errors ----------------------------------

    async def _call(self, token: str | None, method: str, *params: Any, extra: dict[str, Any] | None = None) -> Any:
        if not self.breaker.admit():
            raise ErpUnreachable(self.breaker.retry_after_s(), "circuit open")
        try:
            if token is None:
                raise LoginExpired()
            context = {**(await self._context(token)), **(extra or {})} if method.startswith("model.") else {}
            answer = await self._rpc.call(header(token), method, *params, context=context)
        except RpcFailed as exc:
            if method != "model.ir.model.data.get_id":
                self.breaker.failed()
                raise ErpUnreachable(self.breaker.retry_after_s(), str(exc)) from None
            self.breaker.succeeded()  # get_id's KeyError: no such XML id in this database
            raise ErpRefused(404, str(exc)) from None
        except RpcUnreachable as exc:
            self.breaker.failed()
            raise ErpUnreachable(self.breaker.retry_after_s(), str(exc)) from None
        except asyncio.CancelledError:
            self.breaker.abandoned()
            raise
        except RpcUnauthorised:
            self.breaker.succeeded()
            raise LoginExpired() from None
        except RpcUserError as exc:
            self.breaker.succeeded()
            raise ErpRefused(403 if exc.access else 400, exc.message) from None
        except RpcConcurrent as exc:
            self.breaker.succeeded()
            raise ErpRefused(409, str(exc)) from None
        self.breaker.succeeded()
        return answer

    async def _context(self, token: str) -> dict[str, Any]:
        """The context Tryton's own clients send with every call: the user's preferences (company,
        companies, language), read once per session and kept a while (``get_preferences(True)``)."""
        key = hashlib.sha256(token.encode()).hexdigest()
        now = time.monotonic()
        hit = self._contexts.get(key)
        if hit is not None and now - hit[0] < self._ttl:
            return hit[1]
        context = await self._rpc.call(header(token), "model.res.user.get_preferences", True, context={})
        context = {**context, "language": context.get("language") or self.language}
        if len(self._contexts) >= _MAX_CACHED:
            self._contexts.clear()
        self._contexts[key] = (now, context)
        return context

    # ---- identity ---------------------------------------------------------------------------------

    async def login(self, username: str, password: str) -> dict[str, Any]:
        try:
            session = await self._rpc.login(username, password, self.language)
        except RpcUnauthorised:
            raise LoginExpired() from None
        except RpcRateLimited as exc:
            raise ToolError(str(exc), code=messages.REFUSED, params={"status": 429, "reason": str(exc)}) from None
        except RpcUnreachable as exc:
            self.breaker.failed()
            raise ErpUnreachable(self.breaker.retry_after_s(), str(exc)) from None
        self.breaker.succeeded()
        name = str((await self._call(session.token, "model.res.user.get_preferences", False)).get("name") or username)
        return {"token": session.token, "expiresAt": None, "user": {"userId": str(session.user_id), "name": name}}

    async def _version(self) -> str:
        try:
            return str(await self._rpc.version())
        except RpcUnreachable as exc:
            self.breaker.failed()
            raise ErpUnreachable(self.breaker.retry_after_s(), str(exc)) from None
        except (RpcUserError, RpcUnauthorised, RpcRateLimited) as exc:
            raise ErpRefused(404, f"not Tryton's JSON-RPC ({exc})") from None

    async def logout(self, token: str) -> dict[str, Any]:
        try:
            await self._rpc.logout(header(token))
        except RpcUnauthorised:
            raise LoginExpired() from None
        except RpcUnreachable as exc:
            raise ErpUnreachable(self.breaker.retry_after_s(), str(exc)) from None
        return {"ok": True}

    async def me(self, token: str) -> dict[str, Any]:
        session = TrytonSession.from_token(token)
        if session is None:  # not a Tryton session: refused, once Tryton is known to answer at all
            await self._version()
            raise LoginExpired()
        preferences = await self._call(token, "model.res.user.get_preferences", False)
        access = await self._call(token, "model.ir.model.access.get_access", [f.model for f in FORMS])
        models = await self._model_rows(token)
        granted = [str(models[m]["id"]) for m, rights in access.items() if rights.get("read") and m in models]
        granted += await self._approval_grants(token, preferences.get("groups") or [])
        return {
            "userId": str(session.user_id),
            "username": session.login,
            "name": preferences.get("name") or session.login,
            "brandsId": preferences.get("company"),
            "subsidiaryId": 0,
            "sAuthsId": granted,
            "jurisdiction": "all",  # Tryton's record rules scope the rows, in Tryton
        }

    async def _approval_grants(self, token: str, groups: list[int]) -> list[str]:
        """The approval policy's grants this user's Tryton groups give (``approvers``). A group
        that is not one of the database's (a typo, a module not activated) is the setting's
        mistake, said at the first login as a ``ConfigError`` — not an outage nor a refusal."""
        out = []
        for group, grant in self.approvers.items():
            if group not in self._group_ids:
                module, _, name = group.partition(".")
                try:
                    self._group_ids[group] = int(await self._call(token, "model.ir.model.data.get_id", module, name))
                except ErpRefused:
                    raise ConfigError(
                        f"TETHER_ERP_TRYTON_APPROVERS names {group!r} (for {grant!r}), which is no group in Tryton's "
                        f"database {self.database!r}: write module.xml_id of a res.group (sale.group_sale_admin)"
                    ) from None
            if self._group_ids[group] in groups:
                out.append(grant)
        return out

    # ---- metadata ---------------------------------------------------------------------------------

    async def _model_rows(self, token: str, language: str | None = None) -> dict[str, dict[str, Any]]:
        now = time.monotonic()
        language = language or await self._language(token)
        kept = self._models.get(language)
        if kept is not None and now - kept[0] < self._ttl:
            return kept[1]
        rows = await self._call(
            token, "model.ir.model.search_read", [["name", "in", [f.model for f in FORMS]]], 0, None, None,
            ["name", "string", "module"], extra={"language": language},
        )  # fmt: skip
        self._models[language] = (now, {str(r["name"]): r for r in rows})
        return self._models[language][1]

    async def _language(self, token: str) -> str:
        return str((await self._context(token)).get("language") or self.language)

    async def _other_languages(self, token: str) -> list[str]:
        """The database's other languages (``ir.lang`` translatable), kept a while: a form, a
        field or an option is found by its name in any of them, and shown in the user's."""
        now = time.monotonic()
        if self._languages is None or now - self._languages[0] >= self._ttl:
            try:
                rows = await self._call(token, "model.ir.lang.search_read", [["translatable", "=", True]], 0, None,
                                        None, ["code"])  # fmt: skip
                codes = [str(r["code"]) for r in rows]
            except ErpRefused:
                codes = []
            self._languages = (now, codes)
        own = await self._language(token)
        return [code for code in self._languages[1] if code != own]

    async def _form(self, token: str, form_id: str) -> tuple[ModelForm, dict[str, Any]]:
        for model, row in (await self._model_rows(token)).items():
            if str(row["id"]) == str(form_id):
                return BY_MODEL[model], row
        raise ErpRefused(404, f"no such form: {str(form_id)[:40]!r}")

    async def _fields(
        self, token: str, model: str, names: tuple[str, ...], language: str | None = None
    ) -> dict[str, dict[str, Any]]:
        """``fields_get`` as this user sees it (cached per user: field access may differ), in the
        user's language or ``language``."""
        now = time.monotonic()
        key = (hashlib.sha256(token.encode()).hexdigest(), f"{model}:{','.join(names)}:{language or ''}")
        hit = self._specs.get(key)
        if hit is not None and now - hit[0] < self._ttl:
            return hit[1]
        extra = {"language": language} if language else None
        specs = await self._call(token, f"model.{model}.fields_get", list(names), extra=extra)
        if len(self._specs) >= _MAX_CACHED:
            self._specs.clear()
        self._specs[key] = (now, specs)
        return dict(specs)

    async def forms(self, token: str) -> list[dict[str, Any]]:
        others = [await self._model_rows(token, language) for language in await self._other_languages(token)]
        out = []
        for model, row in (await self._model_rows(token)).items():
            name = str(row.get("string") or model)
            aliases = [str(o[model]["string"]) for o in others if model in o and o[model].get("string")]
            out.append({"formId": str(row["id"]), "name": name, "module": row.get("module") or "",
                        "aliases": list(dict.fromkeys(a for a in aliases if a != name)), "description": "", "view": ""})  # fmt: skip
        return out

    async def config(self, token: str, form_id: str) -> dict[str, Any]:
        form, row = await self._form(token, form_id)
        rights = (await self._access(token)).get(form.model) or {}
        writable = bool(form.editable) and bool(rights.get("create")) and bool(rights.get("write"))
        form_ids = {model: str(r["id"]) for model, r in (await self._model_rows(token)).items()}
        master, detail, filters = await self._layout(token, form, None)
        for language in await self._other_languages(token):  # a label in either language finds its field
            other = await self._layout(token, form, language)
            add_aliases(master, other[0], "column")
            add_aliases((detail or {}).get("fields") or [], (other[1] or {}).get("fields") or [], "column")
            add_aliases(filters, other[2], "name")
        config: dict[str, Any] = {
            "formId": str(row["id"]),
            "name": str(row.get("string") or form.model),
            "module": row.get("module") or "",
            "view": "",
            "table": form.model,  # an approval policy names the form by it (its id is the database's)
            "examinable": writable and bool(form.steps),
            "writable": writable,
            "billNoPrefix": None,
            "master": master,
            "detail": detail,
            "filters": filters,
        }
        if writable:
            await self._as_writable(token, form, config, form_ids)
        for f in master:  # a reference to another form names it by its id, as on any ERP
            if f.get("ref") in form_ids:
                f["ref"] = form_ids[str(f["ref"])]
        return config

    async def _layout(
        self, token: str, form: ModelForm, language: str | None
    ) -> tuple[list[dict[str, Any]], dict[str, Any] | None, list[dict[str, Any]]]:
        """A form's fields, its lines' fields and its filters, labelled in ``language`` (default:
        the user's)."""
        specs = await self._fields(token, form.model, form.fields, language)
        named = [(n, specs[n]) for n in form.fields if n in specs and n != "addresses"]
        master = [m for n, spec in named for m in field_meta(n, spec)]
        if "addresses" in form.fields:
            master += await self._address_fields(token, language)
        detail = None
        if form.lines and form.line_model:
            line_specs = await self._fields(token, form.line_model, form.line_fields, language)
            lines = [m for n in form.line_fields if n in line_specs
                     for m in field_meta(n, line_specs[n], LINE_COLUMNS.get(n))]  # fmt: skip
            detail = {"fields": lines, "minLines": 1, "maxLines": 50, "listPriceColumn": "list_price_used"}
        filters = filters_of(named)
        if "addresses" in form.fields:
            filters += [
                {"name": f["column"], "label": f["label"], "type": "text", "column": f["column"], "op": "like"}
                for f in master
                if f["column"] in ("city", "street")
            ]
        return master, detail, filters

    async def _as_writable(self, token: str, form: ModelForm, config: dict[str, Any], form_ids: dict[str, str]) -> None:
        """A writable form's fields as a proposal fills them: what the form may set is not
        read-only, a reference to another form is a ``ref`` to it, a warehouse one of the user's
        (the first by default), a sale's date today by default; and how its writes go (port.py)."""
        editable = {*form.editable, *(f"{n}_id" for n in form.editable)}
        line_editable = {LINE_COLUMNS.get(n, n) for n in form.line_editable}
        line_editable |= {f"{n}_id" for n in line_editable}
        for fields, allowed in (
            (config["master"], editable),
            ((config["detail"] or {}).get("fields") or [], line_editable),
        ):
            for f in fields:
                column = str(f["column"])
                f["readOnly"] = column not in allowed
                if column.endswith("_id") and f.get("ref") in form_ids and not f["readOnly"]:
                    f["type"], f["ref"] = "ref", form_ids[str(f["ref"])]
                if column in ("material_id", "qty"):
                    f["required"] = True
                if column == "warehouse_id":
                    options = await self._warehouse_options(token)
                    f.update(type="select", options=options, ref=None, default=options[0]["value"] if options else None)
                if f.get("type") == "date" and column.endswith("_date"):
                    f["default"] = "today"
        config.update(
            executesOnConfirm=True,
            billNoFilter="number",
            statusColumn="state",
            examineSteps={state: {"action": action, "to": to} for state, action, to in form.steps},
        )

    async def _access(self, token: str) -> dict[str, dict[str, Any]]:
        """``ir.model.access.get_access`` of the forms' models and their lines', as this user has it."""
        now = time.monotonic()
        key = (hashlib.sha256(token.encode()).hexdigest(), "#access")
        hit = self._specs.get(key)
        if hit is not None and now - hit[0] < self._ttl:
            return hit[1]
        models = sorted({f.model for f in FORMS} | {f.line_model for f in FORMS if f.line_model})
        access = dict(await self._call(token, "model.ir.model.access.get_access", models))
        self._specs[key] = (now, access)
        return access

    async def _warehouse_options(self, token: str) -> list[dict[str, str]]:
        """The warehouses this user may choose, kept a while per user (every read asks the config)."""
        now = time.monotonic()
        key = (hashlib.sha256(token.encode()).hexdigest(), "#warehouses")
        hit = self._specs.get(key)
        if hit is not None and now - hit[0] < self._ttl:
            return list(hit[1].values())
        rows = await self._call(
            token, "model.stock.location.search_read", [["type", "=", "warehouse"]], 0, None, [["id", "ASC"]],
            ["rec_name"],
        )  # fmt: skip
        options = {str(r["id"]): {"value": str(r["id"]), "label": str(r.get("rec_name") or r["id"])} for r in rows}
        self._specs[key] = (now, options)
        return list(options.values())

    async def _all_fields(self, token: str, model: str) -> dict[str, dict[str, Any]]:
        """Every field of ``model`` as this user sees it (a write's types and defaults)."""
        return await self._fields(token, model, ())

    async def _address_fields(self, token: str, language: str | None = None) -> list[dict[str, Any]]:
        specs = await self._fields(token, "party.address", ("city", "street"), language)
        return [m for n in ("city", "street") if n in specs for m in field_meta(n, specs[n])]

    # ---- reads ------------------------------------------------------------------------------------

    async def read(self, token: str, form_id: str, params: dict[str, Any], page: int, page_size: int) -> dict[str, Any]:
        form, _row = await self._form(token, form_id)
        config = await self.config(token, form_id)
        try:
            domain = domain_of(form, config["filters"], params)
        except (ValueError, ArithmeticError):
            raise ErpRefused(400, "a filter's value is not of its type (a number, or a date as YYYY-MM-DD)") from None
        specs = await self._fields(token, form.model, form.fields)
        names = fields_to_read(form, specs) + (
            ["addresses.city", "addresses.street"] if "addresses" in form.fields else []
        )
        order = [list(o) for o in form.order]
        offset = (max(page, 1) - 1) * page_size
        extra = {"locations": await self._warehouses(token)} if form.stock else None
        rows, total = await asyncio.gather(
            self._call(token, f"model.{form.model}.search_read", domain, offset, page_size, order, names, extra=extra),
            self._call(token, f"model.{form.model}.search_count", domain),
        )
        return {"rows": [_with_address(flatten(r, specs), r) for r in rows], "total": int(total)}

    async def _warehouses(self, token: str) -> list[int]:
        """The warehouses this user may see: where a product's quantity on hand is counted."""
        rows = await self._call(token, "model.stock.location.search", [["type", "=", "warehouse"]], 0, None, None)
        return [int(r) for r in rows]

    async def record(self, token: str, form_id: str, record_id: str) -> dict[str, Any]:
        form, _row = await self._form(token, form_id)
        specs = await self._fields(token, form.model, form.fields)
        try:
            ident = int(record_id)
        except ValueError:
            raise ErpRefused(404, f"no record {record_id[:64]!r}") from None
        extra = {"locations": await self._warehouses(token)} if form.stock else None
        rows = await self._call(
            token, f"model.{form.model}.search_read", [["id", "=", ident], *[list(c) for c in form.domain]], 0, 1,
            None, [*fields_to_read(form, specs), "_timestamp"], extra=extra,
        )  # fmt: skip
        if not rows:  # unknown, or hidden by Tryton's record rules: the same answer
            raise ErpRefused(404, f"no record {record_id[:64]!r}")
        details: list[dict[str, Any]] = []
        if form.lines and form.line_model:
            line_specs = await self._fields(token, form.line_model, form.line_fields)
            names = [n for n in form.line_fields if n in line_specs]
            names += [f"{n}.rec_name" for n in names if line_specs[n].get("type") == "many2one"]
            names += ["product.code"] if "product" in names else []
            lines = await self._call(
                token, f"model.{form.line_model}.search_read", [["sale" if form.model == "sale.sale" else "purchase",
                "=", ident]], 0, None, [["sequence", "ASC"], ["id", "ASC"]], names,
            )  # fmt: skip
            details = [{**flatten(line, line_specs, LINE_COLUMNS), "line_no": n} for n, line in enumerate(lines, 1)]
        return {"master": flatten(rows[0], specs), "details": details}

    # ---- writes: nothing staged in Tryton; the confirm executes the op's own values ---------------

    def link(self, model: str, ident: int) -> str | None:
        """The record in Tryton's web client (sao), where one is served (``web_url``)."""
        return f"{self.web_url.rstrip('/')}/#{self.database}/model/{model}/{ident}" if self.web_url else None

    async def _write_form(self, token: str, form_id: str, op_type: str) -> ModelForm:
        form, _row = await self._form(token, form_id)
        rights = (await self._access(token)).get(form.model) or {}
        if not form.editable or not rights.get(RIGHTS.get(op_type, "write")):
            raise ErpRefused(403, f"your Tryton groups may not {op_type} {form.model} records")
        return form

    async def stage(self, token: str, body: dict[str, Any]) -> dict[str, Any]:
        """A proposal: the user's rights checked now, nothing written to Tryton (tether holds the op)."""
        await self._write_form(token, str(body.get("targetFormId")), str(body.get("opType")))
        return {"status": "draft", "sId": body.get("sId")}

    async def staged(self, token: str, op: Op) -> dict[str, Any]:
        """Whether ``op`` ran (its mark on a record); the fingerprint is tether's to hold: there is
        no staged row in Tryton to compare."""
        form, _row = await self._form(token, op.form_id)
        found = await self._writes.marked(token, op, form) if op.op_type != "delete" else None
        return {"status": "executed" if found else "draft", "resultBillId": str(found["id"]) if found else None}

    async def exec_staging(self, token: str, op: Op, mode: str) -> dict[str, Any]:
        if mode != "execute":
            raise ErpRefused(409, "Tryton executes an op on the confirm; there is no form to save it in")
        form = await self._write_form(token, op.form_id, op.op_type)
        return await self._writes.execute(token, op, form)

    async def revise_staging(self, token: str, op_id: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True}  # the edited values are tether's op; the rights are Tryton's at the confirm

    async def cancel_staging(self, token: str, op: Op) -> dict[str, Any]:
        return {"status": "cancelled"}


def header(token: str) -> str:
    """Tryton's ``Authorization`` for a token tether holds (``base64(login:user_id:session)``)."""
    return f"Session {token}"


def _with_address(row: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
    addresses = raw.get("addresses.") or []
    if isinstance(addresses, list) and addresses:
        row["city"] = addresses[0].get("city")
        row["street"] = addresses[0].get("street")
    row.pop("addresses", None)
    return row
