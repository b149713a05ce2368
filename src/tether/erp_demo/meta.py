"""Form metadata in the database: ``form_config`` / ``form_field`` (the gdsconfigformslave-like
tables), the knowledge-graph tables behind the ``viw_kg_*`` views and ``ai_query_view`` — all
rewritten from ``forms.py`` by ``prepare`` — and the ``/forms`` and ``/forms/{id}/config`` answers
read back from them."""

from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa

from tether.erp_demo.errors import NotFound
from tether.erp_demo.forms import BY_ID, DOMAINS, FLOW, FORMS, QUERY_VIEWS, Field, card_text
from tether.erp_demo.schema import ai_query_view, employee, form_config, form_field, kg_domain, kg_edge, warehouse
from tether.erp_demo.users import User
from tether.erp_demo.validation import MAX_LINES
from tether.erp_demo.values import MAX_NUMBER


def _field_row(form_id: str, part: str, n: int, f: Field) -> dict[str, Any]:
    return {
        "form_id": form_id,
        "part": part,
        "column_name": f.column,
        "label": f.label,
        "field_type": f.type,
        "ref_form": f.ref,
        "is_required": f.required,
        "options_json": json.dumps([{"value": v, "label": lb} for v, lb in f.options], ensure_ascii=False)
        if f.options
        else None,
        "options_source": f.options_source,
        "default_value": f.default,
        "is_read_only": f.read_only,
        "max_length": f.max_length,
        "sort_order": n,
    }


def metadata_rows() -> dict[sa.Table, list[dict[str, Any]]]:
    configs, fields = [], []
    for n, form in enumerate(FORMS):
        configs.append(
            {
                "form_id": form.form_id,
                "name": form.name,
                "module": form.module,
                "domain": form.domain,
                "table_name": form.table,
                "detail_table": form.detail_table,
                "detail_parent_column": form.detail_parent,
                "view_name": form.view,
                "bill_no_prefix": form.bill_prefix,
                "examinable": form.examinable,
                "writable": form.writable,
                "row_scoped": form.row_scoped,
                "aliases": ",".join(form.aliases),
                "description": form.description,
                "answers": form.answers,
                "filters_json": json.dumps([_filter_json(f) for f in form.filters], ensure_ascii=False),
                "card": card_text(form),
                "sort_order": n,
            }
        )
        fields += [_field_row(form.form_id, "master", i, f) for i, f in enumerate(form.fields)]
        fields += [_field_row(form.form_id, "detail", i, f) for i, f in enumerate(form.detail_fields)]
    domains = [
        {
            "domain_id": did,
            "name": name,
            "description": text,
            "form_ids": ",".join(ids),
            "form_names": ",".join(BY_ID[i].name for i in ids),
            "sort_order": n,
        }
        for n, (did, name, text, ids) in enumerate(DOMAINS)
    ]
    edges = [
        {"from_form_id": a, "to_form_id": b, "kind": "flow", "relation": rel, "via_column": via,
         "description": f"{BY_ID[a].name} {rel} {BY_ID[b].name}（{BY_ID[b].table}.{via}）", "seq": n}
        for n, (a, b, rel, via) in enumerate(FLOW)
    ]  # fmt: skip
    seen = set()
    for form in FORMS:
        for f in (*form.fields, *form.detail_fields):
            if f.ref and f.ref != form.form_id and (form.form_id, f.ref) not in seen:
                if (f.ref, form.form_id) in {(a, b) for a, b, _, _ in FLOW}:
                    continue
                seen.add((form.form_id, f.ref))
                edges.append(
                    {"from_form_id": form.form_id, "to_form_id": f.ref, "kind": "ref", "relation": "引用",
                     "via_column": f.column, "description": f"{form.name}.{f.label} 引用 {BY_ID[f.ref].name}", "seq": 0}
                )  # fmt: skip
    views = [{"view_name": v, "form_id": f} for v, f in QUERY_VIEWS.items()]
    return {form_config: configs, form_field: fields, kg_domain: domains, kg_edge: edges, ai_query_view: views}


def _filter_json(f: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": f.name, "label": f.label, "type": f.type, "column": f.column, "op": f.op}
    if f.options:
        out["options"] = [{"value": v, "label": lb} for v, lb in f.options]
    return out


def refresh(conn: sa.Connection) -> None:
    for table, rows in metadata_rows().items():
        conn.execute(table.delete())
        conn.execute(table.insert(), rows)


def list_forms(conn: sa.Connection) -> list[dict[str, Any]]:
    rows = conn.execute(sa.select(form_config).order_by(form_config.c.sort_order)).all()
    return [
        {
            "formId": r.form_id,
            "name": r.name,
            "module": r.module,
            "domain": r.domain,
            "table": r.table_name,
            "detailTable": r.detail_table,
            "view": r.view_name,
            "aliases": [a for a in r.aliases.split(",") if a],
            "description": r.description,
            "answers": r.answers,
        }
        for r in rows
    ]


def _options(conn: sa.Connection, user: User, source: str | None, stored: str | None) -> list[dict[str, str]] | None:
    if stored:
        options: list[dict[str, str]] = json.loads(stored)
        return options
    if source == "warehouse":
        rows = conn.execute(
            sa.select(warehouse.c.id, warehouse.c.name)
            .where(warehouse.c.brands_id == user.brands_id, warehouse.c.subsidiary_id == user.subsidiary_id)
            .order_by(warehouse.c.code)
        )
        return [{"value": r.id, "label": r.name} for r in rows]
    if source == "employee":
        rows = conn.execute(
            sa.select(employee.c.id, employee.c.name)
            .where(
                employee.c.brands_id == user.brands_id,
                employee.c.subsidiary_id == user.subsidiary_id,
                employee.c.dept == "销售部",
            )
            .order_by(employee.c.id)
        )
        return [{"value": r.id, "label": r.name} for r in rows]
    return None


def form_config_of(conn: sa.Connection, user: User, form_id: str) -> dict[str, Any]:
    config = conn.execute(sa.select(form_config).where(form_config.c.form_id == form_id)).first()
    if config is None:
        raise NotFound(f"no such form: {form_id[:40]!r}; GET /forms lists them")
    fields = conn.execute(
        sa.select(form_field)
        .where(form_field.c.form_id == form_id)
        .order_by(form_field.c.part, form_field.c.sort_order)
    ).all()

    code = BY_ID.get(form_id)  # number bounds come from the form definitions (not stored columns)

    def bounds(r: Any) -> dict[str, Any]:
        if code is None or r.field_type not in ("number", "integer"):
            return {}
        f = code.master_field(r.column_name) if r.part == "master" else code.detail_field(r.column_name)
        if f is None:
            return {}
        out: dict[str, Any] = {"max": MAX_NUMBER}
        if f.min_value is not None:
            out["min"] = f.min_value
        if f.positive:
            out["positive"] = True
        return out

    def shape(r: Any) -> dict[str, Any]:
        return {
            "column": r.column_name,
            "label": r.label,
            "type": r.field_type,
            "ref": r.ref_form,
            "required": bool(r.is_required),
            "options": _options(conn, user, r.options_source, r.options_json),
            "default": r.default_value,
            "readOnly": bool(r.is_read_only),
            "maxLength": r.max_length,
            **bounds(r),
        }

    master = [shape(r) for r in fields if r.part == "master"]
    detail = [shape(r) for r in fields if r.part == "detail"]
    return {
        "formId": config.form_id,
        "name": config.name,
        "module": config.module,
        "domain": config.domain,
        "table": config.table_name,
        "view": config.view_name,
        "examinable": bool(config.examinable),
        "writable": bool(config.writable),
        "billNoPrefix": config.bill_no_prefix,
        "master": master,
        "detail": {
            "table": config.detail_table,
            "parentColumn": config.detail_parent_column,
            "fields": detail,
            "minLines": 1,
            "maxLines": MAX_LINES,
        }
        if config.detail_table
        else None,
        "filters": json.loads(config.filters_json),
    }
