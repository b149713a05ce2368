"""The local Tryton's demo company, as plain data: who, what, where and the known passwords. The
seed (``seed.py``) turns it into records through Tryton's own API; the tests check it through RPC.
Deterministic: no randomness, no clock — every date is counted from ``DEMO_DAY``."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from decimal import Decimal

DEMO_DAY = datetime.date(2026, 11, 30)  # the seed's "today": sales, invoices and payments are dated before it
COMPANY = "星辰贸易有限公司"
CURRENCY = "CNY"
ADMIN_PASSWORD = "Admin-Tryton-8"  # trytond-admin's administrator (login admin)


@dataclass(frozen=True)
class DemoUser:
    login: str
    name: str
    password: str
    groups: tuple[str, ...]  # Tryton groups by XML id (module.id)
    role: str


USERS = (
    DemoUser("sales", "李销售", "Sales-Tryton-8", ("sale.group_sale",), "salesperson"),
    DemoUser("stock", "王仓管", "Stock-Tryton-8", ("stock.group_stock",), "stock keeper"),
    DemoUser("accountant", "赵会计", "Books-Tryton-8", ("account.group_account",), "accountant"),
    DemoUser(
        "manager",
        "陈经理",
        "Manager-Tryton-8",
        ("sale.group_sale", "sale.group_sale_admin", "purchase.group_purchase", "stock.group_stock"),
        "sales manager (the approver)",
    ),
)

CITIES = ("上海", "北京", "广州", "深圳", "杭州", "南京", "成都", "武汉", "苏州", "天津")

CUSTOMERS = (
    "华东机电设备有限公司",
    "北方重工集团",
    "南粤电子科技有限公司",
    "鹏城智能制造有限公司",
    "西湖精密仪器有限公司",
    "金陵建材贸易公司",
    "天府食品有限公司",
    "江城汽车配件厂",
    "姑苏纺织品有限公司",
    "津门港口物流有限公司",
    "浦江医疗器械有限公司",
    "燕山化工有限公司",
    "珠江家居用品有限公司",
    "前海新能源有限公司",
    "钱塘包装材料厂",
    "秦淮文具礼品公司",
    "锦官城酒店管理有限公司",
    "楚天建设工程有限公司",
    "吴中五金制品厂",
    "海河农业机械公司",
)
SUPPLIERS = (
    "宝山钢材供应有限公司",
    "京北塑料原料公司",
    "羊城电缆有限公司",
    "南山芯片分销有限公司",
    "余杭轴承制造厂",
    "六合化纤有限公司",
    "双流木业有限公司",
    "汉阳铸造厂",
    "昆山电机有限公司",
    "滨海油品贸易公司",
    "松江包装印刷厂",
    "顺义仪表有限公司",
)

# (code, name, unit XML id in product, list price, cost price, kind: goods or service)
_GOODS = tuple(
    (f"P{n:03d}", name, uom, Decimal(price), Decimal(price) * Decimal("0.6"), "goods")
    for n, (name, uom, price) in enumerate(
        (
            ("不锈钢螺栓 M8", "uom_unit", "1.20"),
            ("不锈钢螺母 M8", "uom_unit", "0.80"),
            ("深沟球轴承 6204", "uom_unit", "18.50"),
            ("三相异步电机 2.2kW", "uom_unit", "1280.00"),
            ("变频器 3kW", "uom_unit", "2150.00"),
            ("铜芯电缆 4mm²", "uom_meter", "9.60"),
            ("PVC 管 DN50", "uom_meter", "12.00"),
            ("镀锌钢板 1.5mm", "uom_kilogram", "6.80"),
            ("铝型材 4040", "uom_meter", "35.00"),
            ("液压油 46#", "uom_liter", "22.00"),
            ("工业润滑脂", "uom_kilogram", "48.00"),
            ("安全帽", "uom_unit", "25.00"),
            ("防护手套", "uom_unit", "6.50"),
            ("叉车托盘", "uom_unit", "120.00"),
            ("纸箱 60×40×40", "uom_unit", "4.20"),
            ("缠绕膜", "uom_kilogram", "15.00"),
            ("PLC 控制器", "uom_unit", "3600.00"),
            ("触摸屏 10 寸", "uom_unit", "1850.00"),
            ("接近开关", "uom_unit", "45.00"),
            ("光电传感器", "uom_unit", "88.00"),
            ("气缸 SC63", "uom_unit", "260.00"),
            ("电磁阀", "uom_unit", "145.00"),
            ("同步带", "uom_unit", "75.00"),
            ("链轮", "uom_unit", "58.00"),
            ("减速机", "uom_unit", "1680.00"),
            ("联轴器", "uom_unit", "96.00"),
            ("密封圈套装", "uom_unit", "32.00"),
            ("焊丝 1.2mm", "uom_kilogram", "14.50"),
            ("切割片", "uom_unit", "3.80"),
            ("砂轮", "uom_unit", "12.80"),
            ("LED 工矿灯", "uom_unit", "320.00"),
            ("配电箱", "uom_unit", "980.00"),
            ("断路器 63A", "uom_unit", "115.00"),
            ("接触器", "uom_unit", "168.00"),
            ("继电器", "uom_unit", "28.00"),
            ("线槽", "uom_meter", "8.50"),
            ("扎带", "uom_unit", "0.10"),
            ("环氧地坪漆", "uom_kilogram", "42.00"),
            ("防锈漆", "uom_kilogram", "26.00"),
            ("工业酒精", "uom_liter", "11.00"),
        ),
        start=1,
    )
)
PRODUCTS = (
    *_GOODS,
    ("S001", "设备安装服务", "uom_hour", Decimal("300.00"), Decimal("150.00"), "service"),
    ("S002", "上门维修服务", "uom_hour", Decimal("260.00"), Decimal("130.00"), "service"),
)

WAREHOUSES = (("WH", "主仓库（上海）"), ("BJ", "北京仓"))  # WH is Tryton's own warehouse, renamed

# The sales in every state: (customer index, state, (product index, quantity)...). "done" ones
# are shipped and their invoice paid; "processing" ones are shipped with a posted, unpaid invoice.
SALES = (
    (0, "draft", ((0, 500), (1, 500))),
    (1, "draft", ((3, 2),)),
    (2, "quotation", ((16, 1), (17, 2))),
    (3, "quotation", ((5, 300),)),
    (4, "confirmed", ((2, 40),)),
    (5, "confirmed", ((20, 6), (21, 6))),
    (6, "processing", ((9, 60),)),
    (7, "processing", ((24, 1), (25, 4))),
    (8, "processing", ((30, 10),)),
    (9, "done", ((11, 50), (12, 200))),
    (10, "done", ((31, 2), (32, 8))),
    (11, "done", ((4, 1), (40, 6))),
)

PURCHASES = (  # (supplier index, state, (product index, quantity)...)
    (0, "draft", ((7, 1000),)),
    (1, "quotation", ((6, 400),)),
    (2, "processing", ((5, 2000),)),
    (3, "processing", ((16, 5), (17, 5))),
)

STOCK = {"WH": 200, "BJ": 60}  # the starting quantity of each goods product per warehouse

# Tryton's zh_CN translations of the models and fields the assistant reads are partly missing or
# fuzzy (and so unused: "Sale", "Number"). The demo company's administrator completes them as one
# would in Tryton's own Administration › Localization › Translations: (name, type, source) →
# the Chinese words this company uses. The seed writes them through Tryton's ir.translation.
ZH_CN = {
    ("party.party,string", "model", "Party"): "往来单位",
    ("party.party,code", "field", "Code"): "编码",
    ("party.address,city", "field", "City"): "城市",
    ("party.address,street", "field", "Street"): "地址",
    ("product.product,string", "model", "Product"): "产品",
    ("product.product,code", "field", "Code"): "产品编码",
    ("product.product,name", "field", "Name"): "产品名称",
    ("product.product,list_price_used", "field", "List Price"): "售价",
    ("product.product,quantity", "field", "Quantity"): "库存数量",
    ("product.product,default_uom", "field", "Default UoM"): "单位",
    ("sale.sale,string", "model", "Sale"): "销售订单",
    ("sale.sale,number", "field", "Number"): "单号",
    ("sale.sale,party", "field", "Party"): "客户",
    ("sale.sale,sale_date", "field", "Sale Date"): "销售日期",
    ("sale.sale,state", "field", "State"): "状态",
    ("sale.sale,untaxed_amount", "field", "Untaxed"): "未税金额",
    ("sale.sale,total_amount", "field", "Total"): "含税合计",
    ("sale.sale,reference", "field", "Reference"): "客户参考号",
    ("sale.sale,description", "field", "Description"): "说明",
    ("sale.sale,state", "selection", "Draft"): "草稿",
    ("sale.sale,state", "selection", "Quotation"): "报价",
    ("sale.sale,state", "selection", "Confirmed"): "已确认",
    ("sale.sale,state", "selection", "Processing"): "执行中",
    ("sale.sale,state", "selection", "Done"): "已完成",
    ("sale.sale,state", "selection", "Cancelled"): "已取消",
    ("sale.line,product", "field", "Product"): "产品",
    ("sale.line,quantity", "field", "Quantity"): "数量",
    ("sale.line,unit", "field", "Unit"): "单位",
    ("sale.line,unit_price", "field", "Unit Price"): "单价",
    ("sale.line,amount", "field", "Amount"): "金额",
    ("purchase.purchase,string", "model", "Purchase"): "采购订单",
    ("purchase.purchase,number", "field", "Number"): "单号",
    ("purchase.purchase,party", "field", "Party"): "供应商",
    ("purchase.purchase,purchase_date", "field", "Purchase Date"): "采购日期",
    ("purchase.purchase,untaxed_amount", "field", "Untaxed"): "未税金额",
    ("purchase.purchase,total_amount", "field", "Total"): "含税合计",
    ("purchase.purchase,state", "selection", "Draft"): "草稿",
    ("purchase.purchase,state", "selection", "Quotation"): "询价",
    ("purchase.purchase,state", "selection", "Confirmed"): "已确认",
    ("purchase.purchase,state", "selection", "Processing"): "执行中",
    ("purchase.purchase,state", "selection", "Done"): "已完成",
    ("purchase.purchase,state", "selection", "Cancelled"): "已取消",
    ("account.invoice,string", "model", "Account Invoice"): "发票",
    ("account.invoice,number", "field", "Number"): "发票号",
    ("account.invoice,party", "field", "Party"): "客户",
    ("account.invoice,invoice_date", "field", "Invoice Date"): "开票日期",
    ("account.invoice,total_amount", "field", "Total"): "含税合计",
    ("account.invoice,amount_to_pay", "field", "Amount to Pay"): "未收金额",
    ("account.invoice,state", "selection", "Draft"): "草稿",
    ("account.invoice,state", "selection", "Validated"): "已审核",
    ("account.invoice,state", "selection", "Posted"): "已过账",
    ("account.invoice,state", "selection", "Paid"): "已收款",
    ("account.invoice,state", "selection", "Cancelled"): "已取消",
}

# A second company in the same database, not ours (appended: nothing above depends on it). Tryton's
# record rules keep its sales and invoices to the users whose companies include it — its own
# salesperson, never the users above, whose companies are COMPANY only. Its sale is of services
# (no stock moves in the shared warehouses), numbered by a sequence of its own (OTHER_PREFIX), and
# invoiced and posted. Parties are shared between companies in Tryton: its customers are parties
# every user may read, as in any Tryton.
OTHER_COMPANY = "月华实业有限公司"
OTHER_CUSTOMERS = ("云岭矿业有限公司", "北海渔业公司", "雪域高原贸易公司")  # codes X001…
OTHER_USERS = (
    DemoUser(
        "rival", "周对手", "Rival-Tryton-8", ("sale.group_sale", "account.group_account"), "the other company's seller"
    ),
)
OTHER_PREFIX = "YH-"  # its sales' numbers: YH-1…
OTHER_INVOICE_PREFIX = "YHI-"  # its invoices' numbers: YHI-1…
OTHER_PRICES = {"S001": Decimal("880.00"), "S002": Decimal("640.00")}  # its own list prices of the services
OTHER_SALE = (0, (("S001", 7), ("S002", 9)))  # (customer index, (product code, hours)...): 7×880 + 9×640 = 11,920
