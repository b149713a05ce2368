"""The demo company's data: two brands in one database (brand 1 a precision-machinery maker,
brand 2 an electronics trader), generated with ``random.Random(seed)`` so the same seed, scale and
day give the same rows. Dates are relative to ``today`` (the last ~12 months). The planted facts
of ``tether.erp_demo.facts`` are put in on top of the ordinary business.

``generate`` returns rows per table; ``insert`` writes them with executemany (seconds for the whole
company on SQLite)."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

import sqlalchemy as sa

from tether.erp_demo import facts
from tether.erp_demo.auth import hash_password
from tether.erp_demo.schema import TABLES

Row = dict[str, Any]

CITIES = (
    "苏州", "常州", "无锡", "天津", "宁波", "佛山", "东莞", "深圳", "青岛", "重庆", "武汉", "长沙",
    "合肥", "成都", "西安", "郑州", "杭州", "温州", "厦门", "昆山", "嘉兴", "济南", "沈阳", "南京",
)  # fmt: skip
WORDS = (
    "华达", "恒通", "鑫源", "金泰", "宏远", "中联", "瑞丰", "永盛", "隆基", "博奥", "创力", "德威", "海川",
    "力诺", "天工", "精诚", "盛隆", "新锐", "正泰", "科迈", "汇丰", "东升", "嘉和", "大成", "同创", "一凯",
    "联众", "凯达", "元丰", "长城", "华锐", "万盛", "三友", "明珠", "百川", "安泰",
)  # fmt: skip
CUSTOMER_SUFFIXES = {
    facts.BRAND_1: (
        ("自动化设备有限公司", "自动化设备"), ("机械制造有限公司", "通用机械"), ("汽车零部件有限公司", "汽车零部件"),
        ("精密五金有限公司", "五金制品"), ("机电工程有限公司", "机电工程"), ("包装机械有限公司", "包装机械"),
        ("重工科技有限公司", "工程机械"), ("智能装备股份有限公司", "智能装备"),
    ),
    facts.BRAND_2: (
        ("智能科技有限公司", "智能硬件"), ("电子科技有限公司", "消费电子"), ("通信技术有限公司", "通信设备"),
        ("物联网技术有限公司", "物联网"), ("新能源科技有限公司", "新能源"), ("医疗电子有限公司", "医疗器械"),
    ),
}  # fmt: skip
SUPPLIER_SUFFIXES = {
    facts.BRAND_1: (
        ("轴承有限公司", "轴承"), ("钢铁贸易有限公司", "钢材"), ("电机有限公司", "电机"),
        ("液压气动有限公司", "液压气动"), ("五金制品有限公司", "紧固件"), ("传动科技有限公司", "传动件"),
    ),
    facts.BRAND_2: (
        ("电子元器件有限公司", "元器件"), ("电路板有限公司", "PCB"), ("半导体有限公司", "芯片"),
        ("连接器有限公司", "连接器"),
    ),
}  # fmt: skip
SURNAMES = "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜叶程魏"
GIVEN = "伟芳娜敏静丽强磊军洋勇艳杰娟涛明超秀霞平刚桂英华建国志红玲斌辉鹏飞峰雪梅琳晨浩宇欣怡"
ROADS = ("人民路", "建设路", "解放路", "中山路", "长江路", "工业大道", "科技路", "新华路", "创业路", "东环路")
NOTES = (
    "", "", "", "", "月结，送货需提前一天预约", "开专票，需附送货单原件", "老客户，付款及时", "收货地址常变，发货前电话确认",
    "年度框架协议客户", "要求提供材质证明", "只接受顺丰/德邦物流", "对价格敏感，需领导审批特价",
)  # fmt: skip
REMARKS = ("", "", "", "含税含运费", "按合同约定付款", "加急", "分批交货", "含安装调试", "客户自提", "价格有效期30天")

# family: (name, unit, category, price range, specs)
FAMILIES = {
    facts.BRAND_1: (
        ("深沟球轴承", "个", "轴承", (12, 60), [f"62{n:02d}-{s}" for n in range(0, 11) for s in ("2RS", "ZZ")]),
        ("角接触球轴承", "个", "轴承", (60, 220), [f"72{n:02d}B" for n in range(4, 12)]),
        (
            "三相异步电机",
            "台",
            "电机",
            (900, 5200),
            [
                f"YE3-{f}-4 {k}kW"
                for f, k in (("80M1", 0.55), ("90S", 1.1), ("100L1", 2.2), ("112M", 4), ("132S", 5.5), ("132M", 7.5))
            ],
        ),
        (
            "蜗轮蜗杆减速机",
            "台",
            "传动件",
            (380, 1600),
            [f"NMRV{s} i={i}" for s in ("030", "040", "050", "063") for i in (10, 20, 30, 40)],
        ),
        ("冷轧钢板", "吨", "钢材", (4800, 6200), [f"Q235 δ{t}mm" for t in ("1.0", "1.5", "2.5", "3.0")]),
        ("镀锌板", "吨", "钢材", (5200, 6800), [f"DX51D δ{t}mm" for t in ("0.8", "1.2", "1.5")]),
        ("圆钢", "吨", "钢材", (4300, 5600), [f"45# Φ{d}" for d in (20, 25, 35, 40, 50, 60)]),
        (
            "直线导轨",
            "根",
            "传动件",
            (180, 760),
            [f"HGR{w}-{length}mm" for w in (15, 25, 30) for length in (500, 800, 1200)],
        ),
        ("导轨滑块", "个", "传动件", (80, 320), [f"HGH{w}CA" for w in (15, 20, 25, 30)]),
        (
            "滚珠丝杠",
            "根",
            "传动件",
            (160, 980),
            [f"SFU{s}-{length}mm" for s in ("1204", "2005", "2505") for length in (400, 800, 1000)],
        ),
        ("标准气缸", "个", "液压气动", (90, 620), [f"SC{b}×{s}" for b in (32, 40, 50, 80) for s in (50, 150, 200)]),
        ("电磁阀", "个", "液压气动", (60, 380), ["4V210-08 DC24V", "4V310-10 DC24V", "4V410-15 AC220V"]),
        ("同步带", "条", "传动件", (18, 120), [f"HTD{p}-{n}" for p in ("3M", "5M", "8M") for n in (300, 450, 600)]),
        ("滚子链", "米", "传动件", (25, 90), ["08B-1", "10A-1", "12A-1", "16A-1"]),
        ("梅花联轴器", "个", "传动件", (30, 260), [f"GR-{d}" for d in (19, 24, 38, 42)]),
        (
            "六角螺栓",
            "盒",
            "紧固件",
            (40, 180),
            [f"M{d}×{length} 8.8级" for d in (8, 10, 16) for length in (30, 40, 60)],
        ),
        ("变频器", "台", "电气", (980, 6800), [f"ATV320U{p}N4B" for p in ("04", "07", "22", "40", "55")]),
        ("PLC控制器", "台", "电气", (1800, 5200), ["FX3U-32MR", "FX3U-48MR", "FX3U-64MR", "S7-1200 CPU1214C"]),
        ("接近开关", "个", "电气", (60, 260), ["E2E-X2ME1", "E2E-X8MD1", "E2E-X10ME1", "LJ12A3-4-Z/BX"]),
    ),
    facts.BRAND_2: (
        (
            "单片机",
            "片",
            "芯片",
            (3, 60),
            ["STM32F030F4P6", "STM32F401CCU6", "STM32F407VET6", "GD32F103C8T6", "ESP32-WROOM-32E"],
        ),
        (
            "贴片电阻",
            "盘",
            "阻容",
            (15, 60),
            [f"{p} {v} ±1% 5000只" for p in ("0402", "0805", "1206") for v in ("1kΩ", "4.7kΩ", "100kΩ")],
        ),
        (
            "贴片电容",
            "盘",
            "阻容",
            (30, 180),
            [f"{p} {v} 4000只" for p in ("0402", "0603") for v in ("100nF", "1uF", "22pF")],
        ),
        ("PCB多层板", "片", "PCB", (18, 120), [f"FR-4 {n}层 {s}" for n in (4, 6) for s in ("100×100", "150×120")]),
        ("电源芯片", "个", "芯片", (0.8, 12), ["LM2596S-5.0", "AMS1117-3.3", "TPS5430DDAR", "MP1584EN"]),
        ("排针连接器", "个", "连接器", (0.2, 3), ["2.54mm 1×40P", "2.54mm 2×20P", "JST-XH 2P", "JST-XH 4P"]),
        ("贴片LED", "盘", "光电", (20, 60), ["0603 红", "0603 绿", "0603 蓝", "0805 白"]),
        ("晶振", "个", "被动件", (0.3, 3), ["12MHz HC-49S", "16MHz 3225", "32.768kHz 2012"]),
        ("二极管", "个", "分立器件", (0.05, 0.8), ["1N4148W", "SS34", "SMBJ15A", "B5819W"]),
        ("功率电感", "个", "被动件", (0.3, 2.5), ["CD54 10uH", "CD54 22uH", "CD54 47uH"]),
        ("显示模组", "个", "光电", (12, 68), ["0.96寸OLED I2C", "2.4寸TFT SPI", "1.3寸IPS"]),
        ("传感器模块", "个", "传感器", (6, 45), ["DHT22", "BME280", "MPU6050", "VL53L0X"]),
    ),
}

# brand -> (customers, suppliers, materials, quotations, purchase orders) at scale 1, and minimums
SIZES = {facts.BRAND_1: (120, 40, 200, 600, 300), facts.BRAND_2: (60, 20, 100, 300, 150)}
MINIMUMS = {facts.BRAND_1: (20, 6, 30, 40, 20), facts.BRAND_2: (8, 4, 15, 20, 10)}
WAREHOUSES = {
    facts.BRAND_1: (("WH01", "原材料仓", "常州市武进区湖塘镇工业园1号"), ("WH02", "成品仓", "常州市武进区湖塘镇工业园2号"), ("WH03", "备件仓", "常州市新北区通江路88号")),
    facts.BRAND_2: (("WH01", "深圳中心仓", "深圳市宝安区福永街道物流园A栋"), ("WH02", "华东仓", "苏州市吴中区物流园3号库")),
}  # fmt: skip
CARD_TERMS = (30, 30, 30, 60, 60, 90)


@dataclass
class _Brand:
    brand: int
    rng: random.Random
    today: date
    rows: dict[str, list[Row]]
    customers: list[Row] = field(default_factory=list)
    suppliers: list[Row] = field(default_factory=list)
    materials: list[Row] = field(default_factory=list)
    warehouses: list[Row] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    def new_id(self, kind: str) -> str:
        self.counters[kind] += 1
        return f"{kind}-{self.brand}-{self.counters[kind]:05d}"

    def tenant(self) -> Row:
        return {"brands_id": self.brand, "subsidiary_id": facts.SUBSIDIARY}

    def days_ago(self, low: int, high: int) -> date:
        return self.today - timedelta(days=self.rng.randint(low, high))

    def stamp(self, day: date) -> datetime:
        return datetime.combine(day, time(8, 30)) + timedelta(minutes=self.rng.randint(0, 540))

    def person(self) -> str:
        return self.rng.choice(SURNAMES) + "".join(self.rng.choice(GIVEN) for _ in range(self.rng.choice((1, 2))))

    def phone(self) -> str:
        return f"1{self.rng.choice('3578')}{self.rng.randint(0, 9)}{self.rng.randint(10_000_000, 99_999_999)}"


def _sized(brand: int, scale: float) -> tuple[int, ...]:
    return tuple(max(lo, round(n * scale)) for n, lo in zip(SIZES[brand], MINIMUMS[brand], strict=True))


def generate(seed: int = 3, scale: float = 1.0, today: date | None = None) -> dict[str, list[Row]]:
    """Rows per table for the whole demo company (both brands), deterministic in (seed, scale, today)."""
    today = today or date.today()
    rng = random.Random(seed)
    rows: dict[str, list[Row]] = defaultdict(list)
    _people(rows, today)
    for brand in (facts.BRAND_1, facts.BRAND_2):
        b = _Brand(brand, random.Random(rng.randrange(2**32)), today, rows)
        n_customers, n_suppliers, n_materials, n_quotes, n_pos = _sized(brand, scale)
        _warehouses(b)
        _customers(b, n_customers)
        _suppliers(b, n_suppliers)
        _materials(b, n_materials)
        _inventory(b)
        _sales(b, n_quotes)
        _purchases(b, n_pos)
    _number_bills(rows)
    return dict(rows)


def _people(rows: dict[str, list[Row]], today: date) -> None:
    rows["company"] += [
        {"brands_id": facts.BRAND_1, "subsidiary_id": facts.SUBSIDIARY, "name": facts.BRAND_1_NAME,
         "short_name": facts.BRAND_1_SHORT, "business": "精密机械零部件制造与机电设备集成"},
        {"brands_id": facts.BRAND_2, "subsidiary_id": facts.SUBSIDIARY, "name": facts.BRAND_2_NAME,
         "short_name": facts.BRAND_2_SHORT, "business": "电子元器件分销与方案贸易"},
    ]  # fmt: skip
    created = datetime.combine(today - timedelta(days=900), time(9))
    for user_id, (name, brand, auths, jurisdiction) in facts.USERS.items():
        rows["erp_user"].append(
            {"id": user_id, "password_hash": hash_password(facts.PASSWORD), "name": name, "brands_id": brand,
             "subsidiary_id": facts.SUBSIDIARY, "auths": ",".join(auths), "jurisdiction": jurisdiction,
             "active": True, "created_at": created}
        )  # fmt: skip
    staff = [
        *((uid, name, facts.BRAND_1, "销售部") for uid, name in facts.BRAND_1_SALESPEOPLE.items()),
        *((uid, name, facts.BRAND_2, "销售部") for uid, name in facts.BRAND_2_SALESPEOPLE.items()),
        ("wh01", facts.USERS["wh01"][0], facts.BRAND_1, "仓储部"),
        ("fin01", facts.USERS["fin01"][0], facts.BRAND_1, "财务部"),
        ("admin", facts.USERS["admin"][0], facts.BRAND_1, "信息部"),
        ("b2admin", facts.USERS["b2admin"][0], facts.BRAND_2, "总经办"),
    ]
    for i, (uid, name, brand, dept) in enumerate(staff):
        rows["employee"].append(
            {"id": uid, "brands_id": brand, "subsidiary_id": facts.SUBSIDIARY, "name": name, "dept": dept,
             "phone": f"0519-8{i:03d}{1000 + i * 37}"}
        )  # fmt: skip


def _warehouses(b: _Brand) -> None:
    for i, (code, name, address) in enumerate(WAREHOUSES[b.brand], 1):
        row = {"id": f"wh-{b.brand}-{i}", **b.tenant(), "code": code, "name": name, "address": address}
        b.warehouses.append(row)
    b.rows["warehouse"] += b.warehouses


def _unique_name(b: _Brand, suffixes: tuple[tuple[str, str], ...], taken: set[str]) -> tuple[str, str, str, str]:
    while True:
        city, word = b.rng.choice(CITIES), b.rng.choice(WORDS)
        suffix, kind = b.rng.choice(suffixes)
        name = f"{city}{word}{suffix}"
        if name not in taken:
            taken.add(name)
            return name, city, word, kind


def _salesman(b: _Brand) -> str:
    if b.brand == facts.BRAND_2:
        return b.rng.choice(tuple(facts.BRAND_2_SALESPEOPLE))
    return b.rng.choices(tuple(facts.BRAND_1_SALESPEOPLE), weights=(25, 25, 17, 17, 16))[0]


def _customers(b: _Brand, n: int) -> None:
    fixed = facts.BRAND_1_CUSTOMERS if b.brand == facts.BRAND_1 else facts.BRAND_2_CUSTOMERS
    start = 1 if b.brand == facts.BRAND_1 else 5001
    taken = {name for _, name, _ in fixed}
    for i in range(max(n, len(fixed))):
        code = f"C{start + i:04d}"
        if i < len(fixed):
            _, name, salesman = fixed[i]
            city = next((c for c in CITIES if name.startswith(c)), "苏州")
            word = next((w for w in WORDS if w in name), name[len(city) : len(city) + 2])
            kind = next((k for s, k in CUSTOMER_SUFFIXES[b.brand] if name.endswith(s)), "机械制造")
        else:
            name, city, word, kind = _unique_name(b, CUSTOMER_SUFFIXES[b.brand], taken)
            people = tuple(facts.BRAND_1_SALESPEOPLE if b.brand == facts.BRAND_1 else facts.BRAND_2_SALESPEOPLE)
            k = i - len(fixed)  # every salesperson has customers, at any scale
            salesman = people[k] if k < len(people) else _salesman(b)
        overdue = code in {c for c, _, _ in facts.OVERDUE_CUSTOMERS} and b.brand == facts.BRAND_1
        notes = facts.HOSTILE_CUSTOMER_NOTES.get(code) if b.brand == facts.BRAND_1 else None
        created = b.stamp(b.days_ago(380, 1500))
        b.customers.append(
            {"id": b.new_id("cus"), **b.tenant(), "code": code, "name": name, "short_name": f"{city}{word}",
             "contact": b.person(), "phone": b.phone(), "city": city,
             "address": f"{city}市{b.rng.choice(ROADS)}{b.rng.randint(1, 999)}号", "industry": kind,
             "credit_limit": float(b.rng.choice((100_000, 200_000, 500_000, 1_000_000, 2_000_000))),
             "payment_terms_days": 30 if overdue else b.rng.choice(CARD_TERMS), "salesman_id": salesman,
             "notes": notes if notes is not None else b.rng.choice(NOTES), "version": 1, "created_at": created,
             "updated_at": created}
        )  # fmt: skip
    b.rows["customer"] += b.customers


def _suppliers(b: _Brand, n: int) -> None:
    taken: set[str] = set()
    start = 1 if b.brand == facts.BRAND_1 else 5001
    for i in range(n):
        name, city, _, kind = _unique_name(b, SUPPLIER_SUFFIXES[b.brand], taken)
        created = b.stamp(b.days_ago(380, 1500))
        b.suppliers.append(
            {"id": b.new_id("sup"), **b.tenant(), "code": f"S{start + i:04d}", "name": name, "contact": b.person(),
             "phone": b.phone(), "city": city, "address": f"{city}市{b.rng.choice(ROADS)}{b.rng.randint(1, 999)}号",
             "category": kind, "payment_terms_days": b.rng.choice(CARD_TERMS), "notes": b.rng.choice(NOTES),
             "version": 1, "created_at": created, "updated_at": created}
        )  # fmt: skip
    b.rows["supplier"] += b.suppliers


def _catalog(b: _Brand) -> Iterable[tuple[str, str, str, str, float, float]]:
    """(name, spec, unit, category, price, safety stock): the fixed entries, then families round-robin."""
    fixed = facts.BRAND_1_MATERIALS if b.brand == facts.BRAND_1 else facts.BRAND_2_MATERIALS
    seen = set()
    for _, name, spec, unit, price, safety in fixed:
        seen.add((name, spec))
        yield name, spec, unit, "常用件", price, safety
    families = FAMILIES[b.brand]
    depth = max(len(f[4]) for f in families)
    for i in range(depth):
        for name, unit, category, (low, high), specs in families:
            if i < len(specs) and (name, specs[i]) not in seen:
                price = round(b.rng.uniform(low, high), 2 if high < 100 else 0)
                yield name, specs[i], unit, category, price, _safety_for(b, price)


def _safety_for(b: _Brand, price: float) -> float:
    if price >= 3000:
        return float(b.rng.choice((2, 3, 5)))
    if price >= 500:
        return float(b.rng.choice((5, 8, 10)))
    if price >= 50:
        return float(b.rng.choice((20, 30, 50)))
    if price >= 5:
        return float(b.rng.choice((50, 100, 200)))
    return float(b.rng.choice((1000, 2000, 5000)))


def _materials(b: _Brand, n: int) -> None:
    start = 1 if b.brand == facts.BRAND_1 else 5001
    for i, (name, spec, unit, category, price, safety) in enumerate(_catalog(b)):
        if i >= n:
            break
        created = b.stamp(b.days_ago(400, 1500))
        b.materials.append(
            {"id": b.new_id("mat"), **b.tenant(), "code": f"M{start + i:04d}", "name": name, "spec": spec,
             "unit": unit, "category": category, "price": float(price), "cost": round(price * b.rng.uniform(0.6, 0.8), 2),
             "safety_stock": float(safety), "remark": "", "version": 1, "created_at": created, "updated_at": created}
        )  # fmt: skip
    b.rows["material"] += b.materials


def _qty(b: _Brand, unit: str, price: float) -> float:
    if unit == "吨":
        return round(b.rng.uniform(0.5, 6), 2)
    if price >= 1000:
        return float(b.rng.randint(1, 10))
    if price >= 100:
        return float(b.rng.randint(2, 40))
    if price >= 5:
        return float(b.rng.randint(10, 300))
    return float(b.rng.choice((500, 1000, 2000, 3000, 5000, 10000)))


def _inventory(b: _Brand) -> None:
    low = {code for code, _, _ in facts.LOW_STOCK_MATERIALS} if b.brand == facts.BRAND_1 else set()
    for m in b.materials:
        safety = m["safety_stock"]
        factor = b.rng.uniform(0.1, 0.6) if m["code"] in low else b.rng.uniform(1.3, 4.0)
        total = safety * factor
        places = [b.warehouses[0]]
        if m["code"] not in low and b.rng.random() < 0.4:
            places.append(b.warehouses[1])
        shares = [1.0] if len(places) == 1 else [0.7, 0.3]
        for wh, share in zip(places, shares, strict=True):
            qty = round(total * share, 2) if m["unit"] == "吨" else float(int(total * share))
            stamp = b.stamp(b.days_ago(1, 30))
            b.rows["inventory"].append(
                {"id": b.new_id("inv"), **b.tenant(), "material_id": m["id"], "warehouse_id": wh["id"], "qty": qty,
                 "last_in_date": b.days_ago(3, 60), "last_out_date": b.days_ago(1, 20), "version": 1,
                 "created_at": stamp, "updated_at": stamp}
            )  # fmt: skip


def _bill(b: _Brand, kind: str, day: date, status: str, remark: str, created_by: str, **extra: Any) -> Row:
    stamp = b.stamp(day)
    examined = status == "examined"
    return {
        "id": extra.pop("id", None) or b.new_id(kind), **b.tenant(), "bill_no": "", "bill_date": day, "status": status,
        "remark": remark, "created_by": created_by, "examined_by": created_by if examined else None,
        "examined_at": stamp + timedelta(hours=2) if examined else None, **extra, "version": 1, "created_at": stamp,
        "updated_at": stamp,
    }  # fmt: skip


def _line(
    b: _Brand, kind: str, parent: str, parent_id: str, n: int, m: Row, qty: float, price: float, **extra: Any
) -> Row:
    return {
        "id": b.new_id(kind), **b.tenant(), parent: parent_id, "line_no": n, "material_id": m["id"], "qty": qty,
        "unit_price": price, "amount": round(qty * price, 2), **extra, "remark": "",
    }  # fmt: skip


def _quote(
    b: _Brand, customer: Row, day: date, status: str, remark: str, picks: list[tuple[Row, float]], **extra: Any
) -> tuple[Row, list[Row]]:
    q = _bill(b, "qt", day, status, remark, customer["salesman_id"], customer_id=customer["id"],
              valid_until=day + timedelta(days=30), delivery_days=b.rng.choice((7, 15, 20, 30, 45)), tax_rate=13.0,
              total_amount=0.0, **extra)  # fmt: skip
    lines = []
    for n, (m, qty) in enumerate(picks, 1):
        price = round(m["price"] * b.rng.uniform(0.92, 1.08), 2)
        lines.append(_line(b, "qtl", "quotation_id", q["id"], n, m, qty, price))
    q["total_amount"] = round(sum(x["amount"] for x in lines), 2)
    b.rows["quotation"].append(q)
    b.rows["quotation_line"] += lines
    return q, lines


def _picks(b: _Brand, k: int) -> list[tuple[Row, float]]:
    return [(m, _qty(b, m["unit"], m["price"])) for m in b.rng.sample(b.materials, k)]


def _sales(b: _Brand, n_quotes: int) -> None:
    by_code = {c["code"]: c for c in b.customers}
    mats = {m["code"]: m for m in b.materials}
    overdue = {c for c, _, _ in facts.OVERDUE_CUSTOMERS} if b.brand == facts.BRAND_1 else set()
    for _ in range(n_quotes):
        day = b.days_ago(3, 365)
        fresh = (b.today - day).days < 20
        status = (
            ("draft" if b.rng.random() < 0.4 else "examined")
            if fresh
            else ("examined" if b.rng.random() < 0.92 else "draft")
        )
        customer = b.rng.choice(b.customers)
        q, lines = _quote(b, customer, day, status, b.rng.choice(REMARKS), _picks(b, b.rng.randint(1, 5)))
        if status == "examined" and b.rng.random() < 0.6:
            _order_chain(b, customer, q, lines)
    if b.brand == facts.BRAND_1:
        target = by_code[facts.REVISION_QUOTATION_CUSTOMER[0]]
        picks = [(mats[code], float(qty)) for code, qty in facts.REVISION_QUOTATION_LINES]
        day = facts.revision_quotation_date(b.today)
        _quote(b, target, day, "draft", facts.REVISION_REMARK, picks, id=facts.REVISION_QUOTATION_ID, _first=True)
        for i, (qid, remark) in enumerate(facts.HOSTILE_QUOTATIONS.items()):
            _quote(
                b,
                target,
                b.today - timedelta(days=40 - 9 * i),
                "draft" if i % 2 else "examined",
                remark,
                _picks(b, 2),
                id=qid,
            )
        for code in sorted(overdue):
            _plant_overdue(b, by_code[code])


def _order_chain(b: _Brand, customer: Row, q: Row, q_lines: list[Row]) -> None:
    day = q["bill_date"] + timedelta(days=b.rng.randint(1, 10))
    if day >= b.today:
        return
    status = "examined" if (b.today - day).days > 5 and b.rng.random() < 0.95 else "draft"
    so = _bill(b, "so", day, status, "", q["created_by"], customer_id=customer["id"], quotation_id=q["id"],
               delivery_date=day + timedelta(days=q["delivery_days"] or 15), total_amount=q["total_amount"])  # fmt: skip
    mats = {m["id"]: m for m in b.materials}
    so_lines = [
        _line(
            b,
            "sol",
            "sales_order_id",
            so["id"],
            x["line_no"],
            mats[x["material_id"]],
            x["qty"],
            x["unit_price"],
            source_line_id=x["id"],
        )
        for x in q_lines
    ]
    b.rows["sales_order"].append(so)
    b.rows["sales_order_line"] += so_lines
    if status != "examined":
        return
    d_day = day + timedelta(days=b.rng.randint(3, 20))
    if d_day >= b.today or b.rng.random() > 0.9:
        return
    wh = b.warehouses[1] if b.brand == facts.BRAND_1 else b.warehouses[0]
    dn = _bill(b, "dn", d_day, "examined", "", "wh01" if b.brand == facts.BRAND_1 else "b2admin",
               customer_id=customer["id"], sales_order_id=so["id"], warehouse_id=wh["id"],
               ship_address=customer["address"], total_amount=so["total_amount"])  # fmt: skip
    b.rows["delivery"].append(dn)
    b.rows["delivery_line"] += [
        _line(
            b,
            "dnl",
            "delivery_id",
            dn["id"],
            x["line_no"],
            mats[x["material_id"]],
            x["qty"],
            x["unit_price"],
            source_line_id=x["id"],
        )
        for x in so_lines
    ]
    i_day = d_day + timedelta(days=b.rng.randint(0, 5))
    if i_day >= b.today or b.rng.random() > 0.92:
        return
    invoice = _invoice(b, customer, i_day, dn["total_amount"], delivery_id=dn["id"], sales_order_id=so["id"])
    _receipts(b, customer, invoice)


def _invoice(b: _Brand, customer: Row, day: date, total: float, **links: Any) -> Row:
    amount = round(total / 1.13, 2)
    invoice = _bill(b, "iv", day, "examined", "", "fin01" if b.brand == facts.BRAND_1 else "b2admin",
                    customer_id=customer["id"], invoice_type="special" if b.rng.random() < 0.8 else "ordinary",
                    amount=amount, tax_amount=round(total - amount, 2), total_amount=round(total, 2),
                    due_date=day + timedelta(days=customer["payment_terms_days"]), **links)  # fmt: skip
    b.rows["sales_invoice"].append(invoice)
    return invoice


def _receipt(b: _Brand, customer: Row, invoice: Row, day: date, amount: float) -> None:
    day = min(max(day, invoice["bill_date"]), b.today - timedelta(days=1))
    b.rows["receipt"].append(
        _bill(b, "rc", day, "examined", "", invoice["created_by"], customer_id=customer["id"], invoice_id=invoice["id"],
              amount=round(amount, 2), method=b.rng.choice(("transfer", "transfer", "transfer", "acceptance", "online")))
    )  # fmt: skip


def _receipts(b: _Brand, customer: Row, invoice: Row) -> None:
    """Ordinary customers pay: anything due more than 30 days ago is paid in full."""
    due: date = invoice["due_date"]
    total = invoice["total_amount"]
    if due + timedelta(days=30) <= b.today:
        pay = True
    elif due < b.today:
        pay = b.rng.random() < 0.5
    else:
        pay = b.rng.random() < 0.3
    if not pay:
        return
    day = due + timedelta(days=b.rng.randint(-20, 25))
    if b.rng.random() < 0.15:
        first = round(total * 0.5, 2)
        _receipt(b, customer, invoice, day - timedelta(days=10), first)
        _receipt(b, customer, invoice, day, total - first)
    else:
        _receipt(b, customer, invoice, day, total)


def _plant_overdue(b: _Brand, customer: Row) -> None:
    """Several examined invoices more than 90 days overdue, barely paid."""
    for i in range(facts.OVERDUE_INVOICES_EACH):
        day = b.today - timedelta(days=230 - 28 * i)
        total = round(b.rng.uniform(30_000, 160_000), 2)
        invoice = _invoice(b, customer, day, total)
        invoice["remark"] = "货款逾期，已多次催收"
        if i == 0:
            _receipt(b, customer, invoice, day + timedelta(days=45), total * 0.2)


def _purchases(b: _Brand, n_pos: int) -> None:
    mats = {m["id"]: m for m in b.materials}
    buyer = "admin" if b.brand == facts.BRAND_1 else "b2admin"
    for _ in range(n_pos):
        supplier = b.rng.choice(b.suppliers)
        day = b.days_ago(2, 365)
        status = "examined" if (b.today - day).days > 7 and b.rng.random() < 0.92 else "draft"
        due = day + timedelta(days=supplier["payment_terms_days"])
        po = _bill(b, "po", day, status, b.rng.choice(REMARKS), buyer, supplier_id=supplier["id"],
                   expected_date=day + timedelta(days=b.rng.randint(5, 25)), due_date=due, total_amount=0.0, paid_amount=0.0)  # fmt: skip
        lines = []
        for n, m in enumerate(b.rng.sample(b.materials, b.rng.randint(1, 4)), 1):
            price = round(m["cost"] * b.rng.uniform(0.95, 1.05), 2)
            lines.append(_line(b, "pol", "purchase_order_id", po["id"], n, m, _qty(b, m["unit"], m["price"]), price))
        po["total_amount"] = total = round(sum(x["amount"] for x in lines), 2)
        if status == "examined":
            if due < b.today - timedelta(days=10):
                po["paid_amount"] = total if b.rng.random() < 0.9 else round(total * 0.5, 2)
            elif b.rng.random() < 0.2:
                po["paid_amount"] = round(total * 0.3, 2)
        b.rows["purchase_order"].append(po)
        b.rows["purchase_order_line"] += lines
        arrive: date = po["expected_date"] + timedelta(days=b.rng.randint(-3, 5))
        if status != "examined" or arrive >= b.today or b.rng.random() > 0.9:
            continue
        inbound = _bill(b, "in", max(arrive, day), "examined", "", "wh01" if b.brand == facts.BRAND_1 else buyer,
                        supplier_id=supplier["id"], purchase_order_id=po["id"], warehouse_id=b.warehouses[0]["id"],
                        total_amount=total)  # fmt: skip
        b.rows["inbound"].append(inbound)
        b.rows["inbound_line"] += [
            _line(
                b,
                "inl",
                "inbound_id",
                inbound["id"],
                x["line_no"],
                mats[x["material_id"]],
                x["qty"],
                x["unit_price"],
                source_line_id=x["id"],
            )
            for x in lines
        ]


PREFIXES = {
    "quotation": "QT", "sales_order": "SO", "delivery": "DN", "sales_invoice": "IV", "receipt": "RC",
    "purchase_order": "PO", "inbound": "IN",
}  # fmt: skip


def _number_bills(rows: dict[str, list[Row]]) -> None:
    """Bill numbers per brand, prefix and month in date order; the bill_seq counters to go on from."""
    for table, prefix in PREFIXES.items():
        bills = rows.get(table, [])
        order = sorted(range(len(bills)), key=lambda i: (bills[i]["bill_date"], not bills[i].pop("_first", False), i))
        last: dict[tuple[int, str], int] = defaultdict(int)
        for i in order:
            bill = bills[i]
            period = f"{bill['bill_date']:%Y%m}"
            key = (bill["brands_id"], period)
            last[key] += 1
            bill["bill_no"] = f"{prefix}{period}-{last[key]:04d}"
        for (brand, period), n in sorted(last.items()):
            rows["bill_seq"].append(
                {
                    "brands_id": brand,
                    "subsidiary_id": facts.SUBSIDIARY,
                    "prefix": prefix,
                    "bill_period": period,
                    "last_no": n,
                }
            )
    for bills in rows.values():
        for bill in bills:
            bill.pop("_first", None)


INSERT_ORDER = (
    "company", "employee", "warehouse", "erp_user", "customer", "supplier", "material", "inventory",
    "quotation", "quotation_line", "sales_order", "sales_order_line", "delivery", "delivery_line",
    "sales_invoice", "receipt", "purchase_order", "purchase_order_line", "inbound", "inbound_line", "bill_seq",
)  # fmt: skip


def _default(column: sa.Column[Any]) -> Any:
    arg = getattr(column.default, "arg", None)
    return None if callable(arg) else arg


def insert(conn: sa.Connection, rows: dict[str, list[Row]], chunk: int = 1000) -> dict[str, int]:
    """Bulk-insert generated rows (executemany in chunks); rows per table."""
    counts: dict[str, int] = {}
    for name in INSERT_ORDER:
        table = TABLES[name]
        fill = {c.name: _default(c) for c in table.columns}
        data = [{**fill, **row} for row in rows.get(name, [])]
        for start in range(0, len(data), chunk):
            conn.execute(table.insert(), data[start : start + chunk])
        counts[name] = len(data)
    return counts
