"""The ERP pack's pieces on their own: the planner's request rules, form search, the read
whitelist, the form gate and the identity cache."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tether.core.session import Owner
from tether.core.tools import ToolContext
from tether.errors import ToolError
from tether.models.planner import render
from tether.packs.erp import authz
from tether.packs.erp.catalog import FormEntry, search
from tether.packs.erp.identity import ErpIdentityProvider, brand_of, tenant_of
from tether.packs.erp.planner_rules import extract
from tether.packs.erp.tools import whitelist

CASES = [
    ("查一下M0007的库存", "read_form_data", {"form_id": "4001", "filters": {"material_code": "M0007"}}),
    ("哪些物料低于安全库存？", "read_form_data", {"form_id": "4002", "filters": {}}),
    ("which materials are below safety stock?", "read_form_data", {"form_id": "4002", "filters": {}}),
    (
        "常州力拓传动机械有限公司的应收账款有多少超期了？",
        "read_form_data",
        {"form_id": "5001", "filters": {"min_overdue_days": 1, "customer_name": "常州力拓传动机械有限公司"}},
    ),
    ("列出超期90天以上的应收", "read_form_data", {"form_id": "5001", "filters": {"min_overdue_days": 90}}),
    ("报价单QT202612-0001的明细", "lookup_record", {"form_id": "2001", "record_id": "QT202612-0001"}),
]


@pytest.mark.parametrize(("query", "tool", "args"), CASES)
def test_planner_rules_choose_the_form_and_filters(query: str, tool: str, args: dict[str, Any]) -> None:
    plan = extract(query, {})["erp"]["plan"]
    assert len(plan) == 1 and plan[0]["tool"] == tool
    assert {k: plan[0]["args"][k] for k in args} == args


def test_sales_summary_and_reconciliation_use_query_data_with_this_month() -> None:
    summary = extract("本月销售订单按客户汇总", {})["erp"]["plan"][0]
    assert summary["tool"] == "query_data" and "GROUP BY customer_name" in summary["args"]["sql"]
    recon = extract("天津北辰重工本月对账", {})["erp"]["plan"][0]["args"]["sql"]
    assert "viw_sales_invoice" in recon and "viw_receipt" in recon and "'%天津北辰重工%'" in recon


def test_a_quote_in_a_customer_name_cannot_break_out_of_the_sql_literal() -> None:
    sql = extract("x' OR 1=1 --本月对账", {})["erp"]["plan"][0]["args"]["sql"]
    assert "'%x''OR1=1--%'" in sql  # the quote is doubled; spaces are dropped from names


@pytest.mark.parametrize(
    "query",
    [
        "把报价单QT202612-0001的备注改成${ctx}",  # the pinned update rule would carry the value as said
        "把报价单QT202612-0001的备注改成请看${steps.0}",
        "给${query}报价：M0003 2个，单价46",
    ],
)
def test_a_template_in_the_users_words_is_never_rendered_by_the_planner(query: str) -> None:
    """The planner renders ``${…}`` in step arguments; the user's words must not reach it as a
    template (they would read the planner's scope: the context, earlier tool results)."""
    pinned = extract(query.replace("${", "{"), {})["erp"]["plan"][0]
    assert pinned["tool"] in ("propose_write", "collect_form")  # without the template a pinned rule takes it
    erp = extract(query, {})["erp"]
    assert erp["plan"][0] == {"tool": "read_question", "args": {"question": "${query}"}}
    rendered = render(erp["plan"][0]["args"], {"query": query, "ctx": {"secret": "S3CR3T"}})
    assert rendered == {"question": query}  # the whole question, as data, once


def test_an_unrecognised_request_goes_to_the_metadata_reader_not_a_guess() -> None:
    erp = extract("今天天气怎么样", {})["erp"]
    assert erp["plan"][0] == {"tool": "read_question", "args": {"question": "${query}"}}
    assert all(step.get("tool") != "read_form_data" for step in erp["plan"])


@pytest.mark.parametrize(
    "query",
    [
        "哪些供应商的应付已经超期了？",
        "超期超过60天的应收有哪些？",
        "6205-2RS还有多少库存",
        "帮我查一下应收",  # not only the overdue ones: no filter the question did not contain
        "应收账款一共多少",
        "这个月应收逾期的客户有哪些",
        "我最近的销售订单",
        "哪些客户最近的订单金额超过1万",
        "哪些客户本月对账有差额",
        "最近30天的销售订单按客户汇总",
        "上个月的采购订单按供应商汇总",
        "销售订单按客户汇总",  # no period asked: no period applied
        "成品仓有哪些库存",
        "给我看看恒达最近的报价单",
        "深沟球轴承的安全库存是多少",
        # a name may be several records (深沟球轴承 is eight bearings, 正泰 three customers): the
        # reader resolves it against the ERP, or asks; a rule would list them all as one
        "查一下深沟球轴承的库存",
        "伺服电机库存还有多少",
        "深沟球轴承还剩多少",
        "无锡锡东精工最近的销售订单",
        "正泰最近的订单",
        "天津北辰最近下了哪些单",
    ],
)
def test_the_pinned_rules_leave_what_they_misread_to_the_reader(query: str) -> None:
    assert extract(query, {})["erp"]["plan"][0]["tool"] == "read_question"


FORMS = [
    FormEntry("4001", "材料库存台账", ("库存", "现存量"), "每个物料在每个仓库的现存数量", "inventory"),
    FormEntry("5001", "应收账龄", ("应收", "欠款", "催收"), "未收清的发票、逾期天数", "finance"),
    FormEntry("2001", "报价单", ("报价",), "给客户的报价", "sales"),
]


def test_find_forms_ranks_by_name_alias_and_description() -> None:
    assert search(FORMS, "客户欠款逾期")[0]["formId"] == "5001"
    assert search(FORMS, "库存")[0]["formId"] == "4001"
    assert search(FORMS, "报价单")[0]["formId"] == "2001"
    assert search(FORMS, "xyz-nothing") == []


CONFIG = {"formId": "4001", "filters": [{"name": "material_code"}, {"name": "material_name"}]}


def test_the_read_whitelist_refuses_every_other_key() -> None:
    assert whitelist(CONFIG, {"material_code": "M1", "material_name": ""}) == {"material_code": "M1"}
    for bad in ({"bUpdate": 1}, {"bUpdateAll": "1"}, {"MATERIAL_CODE": "x"}, {"material_code ": "x"}):
        with pytest.raises(ToolError, match="not a filter of form 4001"):
            whitelist(CONFIG, bad)
    for value in ([1], {"a": 1}, True, "x" * 201):
        with pytest.raises(ToolError):
            whitelist(CONFIG, {"material_code": value})


def _ctx(grants: set[str]) -> ToolContext:
    return ToolContext(Owner("u", "erp-1-1"), "s", "t", "c", {}, frozenset(grants), "tok")


def test_the_form_gate_gives_one_answer_for_ungranted_and_unknown_forms() -> None:
    ctx = _ctx({"4001"})
    assert authz.granted_form(ctx, " 4001 ") == "4001"
    messages = set()
    for form in ("5001", "9999", "../me", "4001 OR 1", 4001.5):
        with pytest.raises(ToolError) as exc:
            authz.granted_form(ctx, form)
        messages.add(exc.value.message.split(":")[0])
    assert messages == {"no such form or no access"}


def test_tenants_carry_the_brand() -> None:
    assert brand_of(tenant_of(2, 1)) == 2 and brand_of("finance-demo") is None


class FakeClient:
    """Stands in for the ERP's /me only (the provider's own logic is under test here)."""

    def __init__(self) -> None:
        self.calls = 0

    async def me(self, token: str) -> dict[str, Any]:
        self.calls += 1
        return {"userId": "fin01", "brandsId": 1, "subsidiaryId": 1, "sAuthsId": ["5001"]}


def test_the_identity_cache_keeps_no_token_and_expires() -> None:
    client = FakeClient()
    provider = ErpIdentityProvider(client, cache_s=60)  # type: ignore[arg-type]

    async def main() -> None:
        first = await provider.identify("secret-token")
        again = await provider.identify("secret-token")
        assert first is not None and again is not None and client.calls == 1
        assert again.credential == "secret-token" and "secret-token" not in repr(again)
        assert all(b"secret-token" not in key for key in provider._cache)
        assert first.owner == Owner("fin01", "erp-1-1") and first.grants == frozenset({"5001"})
        provider.forget("secret-token")
        await provider.identify("secret-token")
        assert client.calls == 2

    asyncio.run(main())


def test_the_migration_head_constant_is_the_history_head() -> None:
    from tether.pack_migrate import PackMigrations, script_head
    from tether.packs.erp.pack import HEAD, MIGRATIONS, VERSION_TABLE

    assert script_head(PackMigrations(MIGRATIONS, "sqlite:///unused.db", VERSION_TABLE)) == HEAD


class ViewShapes:
    """The query database's answers to the two questions QueryService asks of it: which views
    belong to which form, and each view's columns."""

    def __init__(self) -> None:
        self.shapes = {
            "viw_customer": ("id", "brands_id", "subsidiary_id", "name", "salesman_id"),
            "viw_material": ("id", "brands_id", "subsidiary_id", "code"),
            "viw_kg_domain": ("domain", "forms"),
        }

    def execute(self, sql: str) -> Any:
        from tether.sqlguard.readonly import QueryResult

        if sql.startswith("SELECT view_name, form_id FROM ai_query_view"):
            return QueryResult(
                ("view_name", "form_id"),
                [("viw_customer", "1001"), ("viw_material", "1003"), ("viw_kg_domain", "9")],
                False,
            )
        view = sql.split(" FROM ")[1].split()[0]
        return QueryResult(self.shapes[view], [], False)


def test_query_views_are_held_to_the_subsidiary_and_an_own_users_rows() -> None:
    from tether.packs.erp.query_data import QueryService

    service = QueryService(ViewShapes(), state=None)  # type: ignore[arg-type]
    ctx = ToolContext(
        Owner("sales01", tenant_of(1, 2)), "ses-1", "turn-1", "call-1", {}, frozenset({"1001", "1003", "9"})
    )
    own = service.policy(ctx, own_rows=True)
    assert own.tenant == 1 and set(own.tables) == {"viw_customer", "viw_material", "viw_kg_domain"}
    assert own.filters == {
        "viw_customer": {"subsidiary_id": 2, "salesman_id": "sales01"},
        "viw_material": {"subsidiary_id": 2},  # no salesperson column: the brand's materials
    }
    assert service.policy(ctx).filters["viw_customer"] == {"subsidiary_id": 2}  # scope all: every customer
    limited = ToolContext(Owner("sales01", tenant_of(1, 2)), "ses-1", "turn-1", "call-1", {}, frozenset({"1003"}))
    assert set(service.policy(limited, own_rows=True).tables) == {"viw_material"}


@pytest.mark.parametrize("query", ["低于100的库存有哪些", "库存低于100的物料"])
def test_a_stock_below_a_number_is_not_the_safety_stock_list(query: str) -> None:
    plan = extract(query, {})["erp"]["plan"]  # a comparison: the reader's, never 4002's shortage list
    assert plan[0]["tool"] == "read_question"


def test_the_low_stock_list_answers_in_the_language_asked() -> None:
    answer = extract("how many items are below safety stock", {})["erp"]["answer"]
    assert answer.startswith("Materials whose stock is below their safety stock")
    assert extract("低于安全库存的物料", {})["erp"]["answer"].startswith("以下物料的现存量低于安全库存")
