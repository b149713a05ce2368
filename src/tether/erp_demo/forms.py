"""The forms of the demo ERP: the one definition the metadata tables (``form_config``,
``form_field``), the read procedures, the write validation and the knowledge graph are made from.

A form's ``filters`` are its read procedure's parameters (the whitelist a careful client keeps to);
``PROCEDURE_EXTRAS`` are parameters a procedure takes on top of them, which the ERP binds just as
readily — on 4001 ``bUpdate`` / ``bUpdateAll`` / ``adjust_qty`` turn a read into a stock write.
"""

from __future__ import annotations

from dataclasses import dataclass, field

STATUS_OPTIONS = (("draft", "草稿"), ("examined", "已审核"))
UNITS = ("个", "台", "套", "米", "公斤", "吨", "张", "根", "件", "盒", "桶", "片", "盘", "卷")
TERMS_OPTIONS = (("30", "30天"), ("60", "60天"), ("90", "90天"))
INVOICE_TYPES = (("special", "增值税专用发票"), ("ordinary", "增值税普通发票"))
PAY_METHODS = (("transfer", "银行转账"), ("acceptance", "银行承兑汇票"), ("cash", "现金"), ("online", "在线支付"))
FIELD_TYPES = ("text", "textarea", "number", "integer", "date", "select", "bool", "ref")


@dataclass(frozen=True)
class Field:
    column: str
    label: str
    type: str = "text"
    ref: str | None = None
    required: bool = False
    options: tuple[tuple[str, str], ...] | None = None
    options_source: str | None = None  # "warehouse" | "employee": options are the caller's tenant's rows
    # a date's: "today" (the day of the write) or "<column>+<n>d" / "today+<n>d" (n days after
    # that date field's value, e.g. a quotation valid 30 days from its bill date); else the value
    default: str | None = None
    read_only: bool = False
    max_length: int | None = None
    min_value: float | None = None
    positive: bool = False  # a number that must be > 0


@dataclass(frozen=True)
class Filter:
    name: str
    label: str
    type: str  # text | date | number | integer | select
    column: str
    op: str = "eq"  # eq | like | gte | lte
    options: tuple[tuple[str, str], ...] | None = None


@dataclass(frozen=True)
class Form:
    form_id: str
    name: str
    module: str
    domain: str
    table: str
    view: str
    fields: tuple[Field, ...]
    filters: tuple[Filter, ...]
    aliases: tuple[str, ...]
    description: str
    answers: str
    order: tuple[str, ...]
    detail_table: str | None = None
    detail_parent: str | None = None
    detail_fields: tuple[Field, ...] = ()
    bill_prefix: str | None = None
    examinable: bool = False
    writable: bool = True
    row_scoped: bool = False  # rows belong to a customer: jurisdiction "own" sees its customers' only
    extras: tuple[str, ...] = field(default=())

    @property
    def params(self) -> frozenset[str]:
        return frozenset(f.name for f in self.filters) | frozenset(self.extras)

    def master_field(self, column: str) -> Field | None:
        return next((f for f in self.fields if f.column == column), None)

    def detail_field(self, column: str) -> Field | None:
        return next((f for f in self.detail_fields if f.column == column), None)


def _status() -> Field:
    return Field("status", "状态", "select", options=STATUS_OPTIONS, default="draft", read_only=True)


def _bill_head(ref_label: str, ref_column: str, ref_form: str) -> tuple[Field, ...]:
    return (
        Field("bill_no", "单号", read_only=True, max_length=32),
        Field("bill_date", "单据日期", "date", required=True, default="today"),
        Field(ref_column, ref_label, "ref", ref=ref_form, required=True, max_length=32),
    )


def _bill_tail() -> tuple[Field, ...]:
    return (_status(), Field("remark", "备注", "textarea", max_length=2000))


def _lines(source: bool = False) -> tuple[Field, ...]:
    lines: tuple[Field, ...] = (
        Field("material_id", "物料", "ref", ref="1003", required=True, max_length=32),
        Field("qty", "数量", "number", required=True, positive=True),
        Field("unit_price", "单价", "number", min_value=0),
        Field("amount", "金额", "number", read_only=True),
    )
    if source:
        lines += (Field("source_line_id", "来源行", read_only=True, max_length=32),)
    return (*lines, Field("remark", "行备注", max_length=255))


def _bill_filters(party: str = "customer", party_label: str = "客户") -> tuple[Filter, ...]:
    return (
        Filter("bill_no", "单号", "text", "bill_no", "like"),
        Filter(f"{party}_name", f"{party_label}名称", "text", f"{party}_name", "like"),
        Filter(f"{party}_id", party_label, "text", f"{party}_id"),
        Filter("status", "状态", "select", "status", options=STATUS_OPTIONS),
        Filter("date_from", "起始日期", "date", "bill_date", "gte"),
        Filter("date_to", "截止日期", "date", "bill_date", "lte"),
    )


BILL_ORDER = ("bill_date desc", "bill_no desc")

FORMS: tuple[Form, ...] = (
    Form(
        "1001",
        "客户档案",
        "sales",
        "客户",
        "customer",
        "viw_customer",
        fields=(
            Field("code", "客户编码", max_length=32),
            Field("name", "客户名称", required=True, max_length=128),
            Field("short_name", "简称", max_length=64),
            Field("contact", "联系人", max_length=64),
            Field("phone", "联系电话", max_length=32),
            Field("city", "城市", max_length=32),
            Field("address", "地址", max_length=255),
            Field("industry", "行业", max_length=64),
            Field("credit_limit", "信用额度", "number", min_value=0),
            Field("payment_terms_days", "账期(天)", "select", options=TERMS_OPTIONS, default="30"),
            Field("salesman_id", "业务员", "select", options_source="employee", max_length=32),
            Field("notes", "备注", "textarea", max_length=2000),
        ),
        filters=(
            Filter("code", "客户编码", "text", "code"),
            Filter("name", "客户名称", "text", "name", "like"),
            Filter("city", "城市", "text", "city", "like"),
            Filter("salesman_id", "业务员", "text", "salesman_id"),
        ),
        aliases=("客户", "客户资料", "客户信息", "往来单位", "customer"),
        description="客户主数据：名称、联系人、电话、城市、信用额度、账期、业务员。",
        answers="某客户的联系人/电话/地址/账期/信用额度是多少；某业务员负责哪些客户。",
        order=("code",),
        row_scoped=True,
    ),
    Form(
        "1002",
        "供应商档案",
        "purchase",
        "采购",
        "supplier",
        "viw_supplier",
        fields=(
            Field("code", "供应商编码", max_length=32),
            Field("name", "供应商名称", required=True, max_length=128),
            Field("contact", "联系人", max_length=64),
            Field("phone", "联系电话", max_length=32),
            Field("city", "城市", max_length=32),
            Field("address", "地址", max_length=255),
            Field("category", "供应类别", max_length=64),
            Field("payment_terms_days", "账期(天)", "select", options=TERMS_OPTIONS, default="30"),
            Field("notes", "备注", "textarea", max_length=2000),
        ),
        filters=(
            Filter("code", "供应商编码", "text", "code"),
            Filter("name", "供应商名称", "text", "name", "like"),
            Filter("category", "供应类别", "text", "category", "like"),
        ),
        aliases=("供应商", "供应商资料", "厂商", "supplier", "vendor"),
        description="供应商主数据：名称、联系人、电话、城市、供应类别、账期。",
        answers="某供应商的联系方式、供应类别和账期。",
        order=("code",),
    ),
    Form(
        "1003",
        "物料档案",
        "inventory",
        "基础资料",
        "material",
        "viw_material",
        fields=(
            Field("code", "物料编码", max_length=32),
            Field("name", "物料名称", required=True, max_length=128),
            Field("spec", "规格型号", max_length=128),
            Field("unit", "单位", "select", required=True, options=tuple((u, u) for u in UNITS), default="个"),
            Field("category", "物料类别", max_length=32),
            Field("price", "销售单价", "number", min_value=0),
            Field("cost", "参考成本", "number", min_value=0),
            Field("safety_stock", "安全库存", "number", min_value=0),
            Field("remark", "备注", "textarea", max_length=2000),
        ),
        filters=(
            Filter("code", "物料编码", "text", "code"),
            Filter("name", "物料名称", "text", "name", "like"),
            Filter("spec", "规格型号", "text", "spec", "like"),
            Filter("category", "物料类别", "text", "category", "like"),
        ),
        aliases=("物料", "产品", "商品", "存货档案", "料号", "material", "product"),
        description="物料/产品主数据：编码、名称、规格、单位、单价、成本、安全库存、当前库存。",
        answers="某物料的编码、规格、单价、安全库存和当前总库存。",
        order=("code",),
    ),
    Form(
        "2001",
        "报价单",
        "sales",
        "销售",
        "quotation",
        "viw_quotation",
        fields=(
            *_bill_head("客户", "customer_id", "1001"),
            Field("valid_until", "有效期至", "date", default="bill_date+30d"),
            Field("delivery_days", "交期(天)", "integer", default="15", min_value=0),
            Field("tax_rate", "税率(%)", "number", default="13", min_value=0),
            Field("total_amount", "含税合计", "number", read_only=True),
            *_bill_tail(),
        ),
        filters=(*_bill_filters(), Filter("remark", "备注", "text", "remark", "like")),
        aliases=("报价", "报价单据", "询价回复", "quotation"),
        description="销售报价单（主表+物料明细）：客户、报价日期、有效期、交期、含税金额、状态、备注。",
        answers="给某客户报过什么价、哪些报价待审核/待修改、报价金额合计；报价可生成销售订单。",
        order=BILL_ORDER,
        detail_table="quotation_line",
        detail_parent="quotation_id",
        detail_fields=_lines(),
        bill_prefix="QT",
        examinable=True,
        row_scoped=True,
    ),
    Form(
        "2002",
        "销售订单",
        "sales",
        "销售",
        "sales_order",
        "viw_sales_order",
        fields=(
            *_bill_head("客户", "customer_id", "1001"),
            Field("quotation_id", "来源报价单", "ref", ref="2001", max_length=32),
            Field("delivery_date", "交货日期", "date"),
            Field("total_amount", "含税合计", "number", read_only=True),
            *_bill_tail(),
        ),
        filters=_bill_filters(),
        aliases=("订单", "销售单", "合同", "sales order"),
        description="销售订单（主表+物料明细）：客户、下单日期、交货日期、金额、来源报价单、状态。",
        answers="某客户下了哪些订单、订单金额、交货日期；订单可生成发货单。",
        order=BILL_ORDER,
        detail_table="sales_order_line",
        detail_parent="sales_order_id",
        detail_fields=_lines(source=True),
        bill_prefix="SO",
        examinable=True,
        row_scoped=True,
    ),
    Form(
        "2003",
        "发货单",
        "sales",
        "销售",
        "delivery",
        "viw_delivery",
        fields=(
            *_bill_head("客户", "customer_id", "1001"),
            Field("sales_order_id", "来源销售订单", "ref", ref="2002", max_length=32),
            Field("warehouse_id", "发货仓库", "select", options_source="warehouse", required=True, max_length=32),
            Field("ship_address", "收货地址", max_length=255),
            Field("total_amount", "含税合计", "number", read_only=True),
            *_bill_tail(),
        ),
        filters=_bill_filters(),
        aliases=("发货", "出库单", "送货单", "销售出库", "delivery"),
        description="销售发货单（主表+物料明细）：客户、发货日期、仓库、来源订单；审核后扣减库存。",
        answers="某订单发了多少货、何时发货、从哪个仓库发；发货单可生成销售发票。",
        order=BILL_ORDER,
        detail_table="delivery_line",
        detail_parent="delivery_id",
        detail_fields=_lines(source=True),
        bill_prefix="DN",
        examinable=True,
        row_scoped=True,
    ),
    Form(
        "2004",
        "销售发票",
        "finance",
        "财务-应收",
        "sales_invoice",
        "viw_sales_invoice",
        fields=(
            *_bill_head("客户", "customer_id", "1001"),
            Field("delivery_id", "来源发货单", "ref", ref="2003", max_length=32),
            Field("sales_order_id", "销售订单", "ref", ref="2002", max_length=32),
            Field("invoice_type", "发票类型", "select", options=INVOICE_TYPES, default="special"),
            Field("amount", "不含税金额", "number", required=True, min_value=0),
            Field("tax_amount", "税额", "number", min_value=0),
            Field("total_amount", "价税合计", "number", read_only=True),
            Field("due_date", "到期日", "date"),
            *_bill_tail(),
        ),
        filters=(
            *_bill_filters(),
            Filter("due_from", "到期日起", "date", "due_date", "gte"),
            Filter("due_to", "到期日止", "date", "due_date", "lte"),
        ),
        aliases=("发票", "开票", "应收发票", "invoice"),
        description="销售发票：客户、开票日期、不含税金额、税额、价税合计、到期日、已收金额、未收余额、逾期天数。",
        answers="给某客户开了哪些发票、哪些发票未收款/已逾期；发票可生成收款单。",
        order=BILL_ORDER,
        bill_prefix="IV",
        examinable=True,
        row_scoped=True,
    ),
    Form(
        "2005",
        "收款单",
        "finance",
        "财务-应收",
        "receipt",
        "viw_receipt",
        fields=(
            *_bill_head("客户", "customer_id", "1001"),
            Field("invoice_id", "核销发票", "ref", ref="2004", max_length=32),
            Field("amount", "收款金额", "number", required=True, positive=True),
            Field("method", "收款方式", "select", options=PAY_METHODS, default="transfer"),
            *_bill_tail(),
        ),
        filters=_bill_filters(),
        aliases=("收款", "回款", "到账", "receipt"),
        description="收款单：客户、收款日期、金额、方式、核销的发票。",
        answers="某客户何时回款、回了多少、核销了哪张发票。",
        order=BILL_ORDER,
        bill_prefix="RC",
        examinable=True,
        row_scoped=True,
    ),
    Form(
        "3001",
        "采购订单",
        "purchase",
        "采购",
        "purchase_order",
        "viw_purchase_order",
        fields=(
            *_bill_head("供应商", "supplier_id", "1002"),
            Field("expected_date", "预计到货日期", "date"),
            Field("due_date", "付款到期日", "date"),
            Field("total_amount", "含税合计", "number", read_only=True),
            Field("paid_amount", "已付金额", "number", min_value=0, default="0"),
            *_bill_tail(),
        ),
        filters=_bill_filters("supplier", "供应商"),
        aliases=("采购", "采购单", "PO", "订货", "purchase order"),
        description="采购订单（主表+物料明细）：供应商、下单日期、预计到货、金额、已付金额；可生成入库单。",
        answers="向某供应商采购了什么、金额多少、何时到货、付了多少。",
        order=BILL_ORDER,
        detail_table="purchase_order_line",
        detail_parent="purchase_order_id",
        detail_fields=_lines(),
        bill_prefix="PO",
        examinable=True,
    ),
    Form(
        "3002",
        "入库单",
        "inventory",
        "库存",
        "inbound",
        "viw_inbound",
        fields=(
            *_bill_head("供应商", "supplier_id", "1002"),
            Field("purchase_order_id", "来源采购订单", "ref", ref="3001", max_length=32),
            Field("warehouse_id", "入库仓库", "select", options_source="warehouse", required=True, max_length=32),
            Field("total_amount", "含税合计", "number", read_only=True),
            *_bill_tail(),
        ),
        filters=_bill_filters("supplier", "供应商"),
        aliases=("入库", "采购入库", "收货单", "到货", "inbound"),
        description="采购入库单（主表+物料明细）：供应商、入库日期、仓库、来源采购订单；审核后增加库存。",
        answers="某采购订单到了多少货、入了哪个仓库。",
        order=BILL_ORDER,
        detail_table="inbound_line",
        detail_parent="inbound_id",
        detail_fields=_lines(source=True),
        bill_prefix="IN",
        examinable=True,
    ),
    Form(
        "4001",
        "材料库存台账",
        "inventory",
        "库存",
        "inventory",
        "viw_inventory",
        fields=(
            Field("material_id", "物料", "ref", ref="1003", read_only=True),
            Field("warehouse_id", "仓库", "select", options_source="warehouse", read_only=True),
            Field("qty", "库存数量", "number", read_only=True),
            Field("last_in_date", "最近入库", "date", read_only=True),
            Field("last_out_date", "最近出库", "date", read_only=True),
        ),
        filters=(
            Filter("material_code", "物料编码", "text", "material_code"),
            Filter("material_name", "物料名称", "text", "material_name", "like"),
            Filter("warehouse_id", "仓库", "text", "warehouse_id"),
            Filter("warehouse_name", "仓库名称", "text", "warehouse_name", "like"),
        ),
        aliases=("库存", "库存台账", "现存量", "SP_Inventory_InOutWarehouse", "stock", "inventory"),
        description="材料库存台账（过程 SP_Inventory_InOutWarehouse）：每个物料在每个仓库的现存数量、最近出入库日期。",
        answers="某物料在各仓库还有多少库存。",
        order=("material_code", "warehouse_code"),
        writable=False,
        extras=("bUpdate", "bUpdateAll", "adjust_qty"),
    ),
    Form(
        "4002",
        "安全库存预警",
        "inventory",
        "库存",
        "viw_safety_stock",
        "viw_safety_stock",
        fields=(
            Field("material_code", "物料编码", read_only=True),
            Field("material_name", "物料名称", read_only=True),
            Field("spec", "规格型号", read_only=True),
            Field("safety_stock", "安全库存", "number", read_only=True),
            Field("stock_qty", "现存数量", "number", read_only=True),
            Field("shortage_qty", "缺口数量", "number", read_only=True),
        ),
        filters=(
            Filter("material_code", "物料编码", "text", "material_code"),
            Filter("material_name", "物料名称", "text", "material_name", "like"),
            Filter("category", "物料类别", "text", "category", "like"),
        ),
        aliases=("安全库存", "缺货预警", "低库存", "库存预警", "补货", "safety stock"),
        description="安全库存预警：现存量低于安全库存的物料、缺口数量。",
        answers="哪些物料低于安全库存、缺多少、需要补货。",
        order=("material_code",),
        writable=False,
    ),
    Form(
        "5001",
        "应收账龄",
        "finance",
        "财务-应收",
        "viw_ar_aging",
        "viw_ar_aging",
        fields=(
            Field("bill_no", "发票号", read_only=True),
            Field("customer_name", "客户名称", read_only=True),
            Field("due_date", "到期日", "date", read_only=True),
            Field("total_amount", "价税合计", "number", read_only=True),
            Field("received_amount", "已收金额", "number", read_only=True),
            Field("balance", "未收余额", "number", read_only=True),
            Field("overdue_days", "逾期天数", "integer", read_only=True),
            Field("aging_bucket", "账龄区间", read_only=True),
        ),
        filters=(
            Filter("customer_name", "客户名称", "text", "customer_name", "like"),
            Filter("customer_id", "客户", "text", "customer_id"),
            Filter("min_overdue_days", "最少逾期天数", "integer", "overdue_days", "gte"),
            Filter("aging_bucket", "账龄区间", "text", "aging_bucket"),
        ),
        aliases=("应收", "应收账款", "账龄", "欠款", "逾期应收", "催收", "AR", "receivable"),
        description="应收账龄：每张未收清的已审核销售发票的未收余额、到期日、逾期天数和账龄区间（未到期/1-30天/31-60天/61-90天/90天以上）。",
        answers="哪些客户欠款、逾期多久、超期应收有哪些（催收）。",
        order=("overdue_days desc", "bill_no"),
        writable=False,
        row_scoped=True,
    ),
    Form(
        "5002",
        "应付账款",
        "finance",
        "财务-应付",
        "viw_ap",
        "viw_ap",
        fields=(
            Field("bill_no", "采购单号", read_only=True),
            Field("supplier_name", "供应商名称", read_only=True),
            Field("due_date", "付款到期日", "date", read_only=True),
            Field("total_amount", "含税合计", "number", read_only=True),
            Field("paid_amount", "已付金额", "number", read_only=True),
            Field("balance", "未付余额", "number", read_only=True),
            Field("overdue_days", "逾期天数", "integer", read_only=True),
        ),
        filters=(
            Filter("supplier_name", "供应商名称", "text", "supplier_name", "like"),
            Filter("supplier_id", "供应商", "text", "supplier_id"),
            Filter("min_overdue_days", "最少逾期天数", "integer", "overdue_days", "gte"),
        ),
        aliases=("应付", "应付账款", "欠供应商", "付款计划", "AP", "payable"),
        description="应付账款：每张未付清的已审核采购订单的未付余额、付款到期日和逾期天数。",
        answers="欠哪些供应商多少钱、哪些应付已到期。",
        order=("overdue_days desc", "bill_no"),
        writable=False,
    ),
)

BY_ID: dict[str, Form] = {f.form_id: f for f in FORMS}
BY_TABLE: dict[str, Form] = {f.table: f for f in FORMS}

# (from, to, relation, via column of the downstream bill): the document flow (L2)
FLOW: tuple[tuple[str, str, str, str], ...] = (
    ("2001", "2002", "生成", "quotation_id"),
    ("2002", "2003", "生成", "sales_order_id"),
    ("2003", "2004", "生成", "delivery_id"),
    ("2004", "2005", "生成", "invoice_id"),
    ("3001", "3002", "生成", "purchase_order_id"),
)

# the eleven business domains (L1): id, name, description, forms
DOMAINS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("D01", "客户", "客户档案、联系人、业务员归属、信用额度与账期。", ("1001",)),
    ("D02", "销售", "报价 → 销售订单 → 发货的销售流程。", ("2001", "2002", "2003")),
    ("D03", "采购", "供应商、采购订单、到货入库。", ("1002", "3001", "3002")),
    ("D04", "库存", "各仓库现存量、出入库、安全库存预警。", ("4001", "4002", "3002")),
    ("D05", "财务-应收", "销售发票、收款核销、应收账龄与逾期催收。", ("2004", "2005", "5001")),
    ("D06", "财务-应付", "采购应付、付款到期与逾期。", ("5002",)),
    ("D07", "生产", "生产计划、工单、领料与完工（本演示系统未开放表单）。", ()),
    ("D08", "质量", "来料检验、过程检验、不合格品处理（本演示系统未开放表单）。", ()),
    ("D09", "人事", "员工、部门与考勤（本演示系统未开放表单）。", ()),
    ("D10", "基础资料", "客户、供应商、物料等主数据。", ("1001", "1002", "1003")),
    ("D11", "系统", "用户、权限(sAuthsId)、AI 待办与暂存(ai_op_queue)（无业务表单）。", ()),
)

# business view -> the form it belongs to (ai_query_view)
QUERY_VIEWS: dict[str, str] = {
    "viw_customer": "1001",
    "viw_supplier": "1002",
    "viw_material": "1003",
    "viw_quotation": "2001",
    "viw_quotation_line": "2001",
    "viw_sales_order": "2002",
    "viw_sales_order_line": "2002",
    "viw_delivery": "2003",
    "viw_sales_invoice": "2004",
    "viw_receipt": "2005",
    "viw_purchase_order": "3001",
    "viw_inbound": "3002",
    "viw_inventory": "4001",
    "viw_safety_stock": "4002",
    "viw_ar_aging": "5001",
    "viw_ap": "5002",
}


def card_text(form: Form) -> str:
    """The form card (``viw_kg_form_card``): what a reader needs to pick the form."""
    fields = "、".join(f.label for f in form.fields)
    detail = "、".join(f.label for f in form.detail_fields)
    parts = [f"{form.name}（{form.form_id}，{form.domain}）：{form.description}", f"主表字段：{fields}。"]
    if detail:
        parts.append(f"明细字段：{detail}。")
    parts.append(f"可回答：{form.answers}")
    return "".join(parts)
