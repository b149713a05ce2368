"""Words of everyday questions that belong to the language, not to any ERP: how a clerk says
"not yet examined", "how many", "in total", "group by", and the filler words around them.
Everything that names a form, a field, an option or a record comes from the ERP's metadata."""

from __future__ import annotations

import re

# an option's label -> the ways a clerk says it (an option is found by its label, then by these)
STATE_SYNONYMS: dict[str, tuple[str, ...]] = {
    "草稿": ("还没有审核", "还没审核", "没有审核", "没审核", "未审核", "待审核", "还没审", "没审", "未审",
             "not examined", "unexamined", "not approved", "unapproved", "pending", "draft"),
    "已审核": ("已经审核", "审核过", "审核了", "已审核", "审过", "已审", "审核通过", "examined", "approved"),
}  # fmt: skip

# words a clerk uses for a label's word (超期 for 逾期): the question is read with the label's word
TERM_SYNONYMS: dict[str, str] = {
    "超期": "逾期",
    "过期": "逾期",
    "逾期了": "逾期",
    "overdue": "逾期",
    "电话": "联系电话",
    "手机": "联系电话",
    "phone": "联系电话",
    "contact": "联系人",
    "到期": "到期日",
    "due": "到期日",
    "address": "地址",
    "customer": "客户",
    "supplier": "供应商",
    "vendor": "供应商",
    # a price is the unit price, a cost price the cost (参考成本 → 成本)
    "价格": "单价",
    "价钱": "单价",
    "售价": "单价",
    "price": "单价",
    "成本价": "成本",
    "cost": "成本",
    "卖": "售价",  # 卖多少钱: what it sells for
    "缺": "缺口",  # 伺服电机缺多少: its shortage
}
# business words that name a form by what it records (销售额 is the amount of sales orders; 下单
# is placing one): word -> the form names or aliases they stand for; a word whose forms the user
# lacks names nothing and is said to be not understood
FORM_WORDS: dict[str, tuple[str, ...]] = {
    "销售额": ("销售订单", "sales order"),
    "营业额": ("销售订单", "sales order"),
    "下单": ("销售订单", "sales order"),
    "卖了": ("销售订单", "sales order"),  # 这个月卖了多少钱: the sales, not the price (卖多少钱)
    "卖出": ("销售订单", "sales order"),
    "采购额": ("采购订单", "purchase order"),
    "回款额": ("收款单", "receipt"),
    "收款额": ("收款单", "receipt"),
    "sales": ("销售订单", "sales order"),
    "sales order": ("销售订单", "sales order"),
    "purchase order": ("采购订单", "purchase order"),
    "invoice": ("发票", "invoice"),
    "还剩": ("库存", "stock"),
    "剩下": ("库存", "stock"),
    "剩余": ("库存", "stock"),
    "还有多少货": ("库存", "stock"),
    # English verbs and nouns of the forms (how much did we receive: the receipts)
    "receive": ("收款单", "receipt"),
    "received": ("收款单", "receipt"),
    "order": ("销售订单", "sales order"),
    "item": ("物料", "material"),
}
# what is left of a stock said without a form word (联轴器还剩几个): the quantity a form holds
LEFT = re.compile(r"还剩|剩下|剩余|剩")
# endings a label drops when a clerk names it: 逾期天数 → 逾期, 客户名称 → 客户
# nouns a label ends with that a clerk says alone: 未收余额 → 余额
LABEL_TAILS = ("余额", "单价", "成本", "额度", "类别", "到期日", "型号")
LABEL_SUFFIXES = ("名称", "编码", "天数", "日期", "类别", "号", "型号", "数量")  # 采购单号 → 采购单, 库存数量 → 库存
LABEL_PREFIXES = (
    "最近",
    "最新",
    "最后",
)  # 最近出库 is said 最后一次出库: the latest phrase is read apart  # a bracketed unit goes first: schema.without_unit

COUNT = re.compile(  # 哪几家 asks which, not how many
    r"总数|(?<!哪)(?:多少|几)\s*(?:个|张|条|家|笔|单|位|种|份|名|项|次|批)|共几|数量|how many|(?<!phone )(?<!□ )number of|count",
    re.I,
)
SUM = re.compile(  # 总 right before a field the metadata explained: 总金额, 总数量; 收了多少款: how much money
    r"一共|总共|合计|总计|总额|总金额|总(?=□)|累计|加起来|总和|共计|in total|total|sum", re.I
)
HOW_MUCH = re.compile(
    r"多少(?:钱|款)|(?:欠|回款|收款|付款|开票)[^，。 ]{0,20}?多少|多少\s*(?:没|未)(?:有)?(?:收|付)|how much",
    re.I,
)  # 收了多少款: a sum of money, asked without 一共
AVG = re.compile(r"平均|均值|average|mean", re.I)
MAX = re.compile(r"最大|最高|最多|最贵|最久|最长|highest|largest|max(?:imum)?|biggest", re.I)
MIN = re.compile(r"最小|最低|最少|最便宜|最短|lowest|smallest|min(?:imum)?", re.I)
GROUP = re.compile(
    r"按\s*(?P<a>[\w]{1,8}?)\s*(?:汇总|统计|分组|合计|分类|排名|排序|分别|各(?:是|有)|来看|划分|分一下)|每个(?P<b>[\w]{1,6})|各(?P<c>[\w]{1,6})|by (?P<d>\w+)",
    re.I,
)
WHICH = re.compile(r"哪(?:个|家|位|一|种)(?P<w>\w{1,6})|谁的|which (?P<e>\w+)", re.I)
BEST_OF = re.compile(r"最(?:大|多|高|小|少|低|久|长|短|贵|便宜)的(?P<w>\w{1,6})")
ASKS_VALUE = re.compile(
    r"是多少|是什么|是谁|是几|多少|几|哪个|哪位|哪天|哪里|哪儿|什么|啥|what|which|who|where|when|how much", re.I
)
# what is left of a quantity (深沟球轴承还剩多少): the sum of the form's quantity
REMAIN = re.compile(
    r"还剩|剩下|剩余|剩(?:多少|几)|还有(?:多少|几)|(?<!安全)库存(?:数量|量)?(?:是|还有|有)?(?:多少|几)|(?:有|剩)(?:多少|几\S?)库存"
    r"|how many left|left in stock|on hand|in stock|still have|(?<!safety )stock of",
    re.I,
)
# a count of kinds, not a quantity: 一共有多少种物料, 有几条库存记录
KINDS = re.compile(r"(?:多少|几)\s*(?:种|类|条|项|个仓库|家)|how many (?:kinds|items|materials|records)", re.I)
# one record, the newest by its date: 最近一张报价单, 最新的订单, the latest receipt
LATEST = re.compile(
    r"最近(?:的)?\s*(?:一|1|那)\s*(?:张|次|笔|单|个|条|批|份)|最新|最后\s*(?:一|1)\s*(?:张|次|笔|单)"
    r"|latest|most recent|newest|last (?:one|record)",
    re.I,
)
# a price asked (多少钱一台, 最贵的物料, price): the form's unit price where it holds no amount
PRICE = re.compile(r"单价|价格|价钱|售价|多少钱\s*(?:一|1|每)|每\S{0,2}多少钱|贵|便宜|price|expensive|cheap", re.I)
# a list asked with its total (列出恒达未收的应收和合计): the rows, and their sum beside them
LISTED = re.compile(r"列出|列一下|列个|清单|明细|哪些|\blist\b", re.I)
# a list asked (哪些物料的单价超过1000元): many records, not the value of one
# a yes/no question's tail (审核了没, 发货了没有, 开了吗): it asks, it does not negate; A-not-A
# (审没审核, 是不是) is read as the same question (reader._normal)
YES_NO = re.compile(r"(?<=[了过])\s*(?:没有?|吗|么)\s*$")
A_NOT_A = re.compile(r"([\u4e00-\u9fff])没\1(\S*?)\s*$")
MANY = re.compile(r"哪些|哪几|有哪|都有|\bwhich\b|\blist\b", re.I)
# the price of one unit of one record (伺服电机多少钱一台): that record's unit price, never a sum
PER_UNIT = re.compile(r"多少钱\s*(?:一|1|每)|每\S{0,2}多少钱|单价|价格|价钱|售价|price", re.I)
# what is still owed (欠供应商的钱, 未收): the balance, not the bill's total
OWED = re.compile(
    r"欠|未付|未收|没(?:有)?付|没(?:有)?收|余额|outstanding|owed?|unpaid|(?:to be|not(?: yet)?) paid", re.I
)
# not (yet) paid (没收完款, 还没付, 未收, unpaid): a balance above zero, on a form that holds one
UNPAID = re.compile(
    r"(?:还)?(?:没|未)(?:有)?(?:收|付|结)(?:完|清|齐|回来|回|到)?(?:款|钱)?|\bunpaid\b|\boutstanding\b|\bopen\b"
    r"|\b(?:still )?(?:to be|not(?: yet)?) paid\b",
    re.I,
)
# an amount of money, also a business word's amount (采购额, 开票额, 成交额: the money of it)
MONEY = re.compile(
    r"钱|款|金额|多少元|营收|(?:销售|采购|进货|订货|开票|成交|交易|报价|发货|收款|付款)额|回款|收入|money|amount|revenue"
    # how much did we receive / have they paid: an amount of money, asked by its verb
    r"|how much\b.*\b(?:receive|received|collect|collected|pay|paid|invoice|invoiced|sell|sold|spend|spent|bill|billed|earn|earned)\b",
    re.I,
)

# filler around the terms a question is made of; what is left after these and the ERP's own words
# must be a record or a value the ERP holds, or the reader says it did not understand it
FILLER = tuple(
    sorted(
        [
            "请问",
            "最久",
            "最长",
            "最短",
            "新",
            "次",
            "最近",
            "最新",
            "近期",
            "钱",
            # what is owed (欠得最多, owe): the shape reads it (OWED); 款 alone stays a word to place
            "欠",
            "owe",
            "owes",
            "owed",
            "请",
            "帮我",
            "帮忙",
            "麻烦",
            "给我",
            "我想",
            "想",
            "知道",
            "一下",
            "查询",
            "查一查",
            "查查",
            "查看",
            "查",
            "看看",
            "看一下",
            "看",
            "列出",
            "列一下",
            "列",
            "显示",
            "统计",
            "找出",
            "找",
            "告诉",
            "哪些",
            "有哪些",
            "哪几",
            "哪个",
            "哪",
            "什么",
            "是多少",
            "多少",
            "几",
            "是",
            "有",
            "了",
            "的",
            "吗",
            "呢",
            "吧",
            "啊",
            "我们",
            "我的",
            "我",
            "咱们",
            "公司",
            "所有",
            "全部",
            "现在",
            "来着",
            "单子",  # 是哪个客户的单子: the bill named
            "issue",  # how many invoices did we issue: the invoices
            "issued",
            "quantity",  # as 数量: the shape reads what is counted or summed
            "qty",
            # measure words after 几/多少 (几台, 多少米, 几桶): the unit, not a word to place
            "台",
            "桶",
            "米",
            "吨",
            "根",
            "盒",
            "只",
            "件",
            "套",
            "块",
            "元",
            "那边",
            "这边",
            "呀",
            "目前",
            "当前",
            "还",
            "已经",
            "已",
            "都",
            "总共",
            "一共",
            "共",
            "合计",
            "总计",
            "总额",
            "累计",
            "加起来",
            "总和",
            "共计",
            "平均",
            "最大",
            "最贵",
            "最便宜",
            "amount",
            "money",
            "最高",
            "最多",
            "最小",
            "最低",
            "最少",
            "个",
            "张",
            "条",
            "家",
            "笔",
            "批",
            "单",
            "位",
            "种",
            "份",
            "名",
            "项",
            "在",
            "给",
            "做",
            "新建",
            "新开",
            "新增",
            "开了",
            "开",
            "下了",
            "下",
            "收了",
            "收到",
            "付了",
            "出",
            "过",
            "里",
            "中",
            "和",
            "与",
            "及",
            "或",
            "情况",
            "记录",
            "信息",
            "数据",
            "列表",
            "清单",
            "明细",
            "其中",
            "分别",
            "按",
            "每个",
            "各",
            "汇总",
            "分组",
            "排名",
            "排序",
            "内",
            "时候",
            "时间",
            "号码",
            "金额",
            "数",
            "数量",
            "怎么样",
            "如何",
            "哪里",
            "谁",
            "需要",
            "要",
            "被",
            "还有",
            "有没有",
            "是否",
            "能",
            "可以",
            "负责",
            "相关",
            "show",
            "latest",
            "newest",
            "recent",
            "most",
            "still",
            "left",
            "hand",
            "pcs",
            "please",
            "list",
            "me",
            "all",
            "my",
            "the",
            "of",
            "in",
            "for",
            "with",
            "what",
            "which",
            "who",
            "how",
            "many",
            "much",
            "is",
            "are",
            "was",
            "were",
            "do",
            "does",
            "did",
            "any",
            "there",
            "total",
            "sum",
            "count",
            "number",
            "by",
            "per",
            "each",
            "top",
            "and",
            "or",
            "to",
            "from",
            "i",
            "have",
            "has",
            "do",
            "you",
            "we",
            "our",
            "us",
            # English function words (the Chinese ones are told by their part of speech: grammar.py);
            # never a word that narrows or turns a question (not, only, except, last, before, than)
            "a",
            "an",
            "get",
            "got",
            "can",
            "could",
            "would",
            "will",
            "tell",
            "give",
            "let",
            "know",
            "want",
            "need",
            "see",
            "check",
            "find",
            "look",
            "up",
            "at",
            "on",
            "about",
            "be",
            "been",
            "am",
            "it",
            "its",
            "they",
            "them",
            "their",
            "your",
            "here",
            "some",
            "currently",
            "now",
            "right",
            "just",
            "also",
            "kindly",
            "pls",
            "plz",
            "hi",
            "hello",
            "hey",
            "thanks",
            "thank",
        ],
        key=len,
        reverse=True,
    )
)
FILLER_RE = re.compile("|".join(rf"\b{re.escape(w)}\b" if w.isascii() else re.escape(w) for w in FILLER), re.I)

# single characters left over that carry no meaning of their own (轴承类, 哪些呀)
IGNORED = frozenset("类些么呀哦嘛儿啥呗哈每天总欠")  # 总金额, 还欠: the sum and the balance are read from the shape

# ---- change requests (``writes.py``): how a clerk says the op; the form, its fields and the
# records come from the ERP's metadata. The first op word of a request is its op.
WRITE_VERBS: dict[str, re.Pattern[str]] = {
    "delete": re.compile(r"删除|删掉|删了|删去|作废|不要了|\bdelete\b|\bremove\b", re.I),
    "examine": re.compile(r"(?<![反已未没待])审(?:核|批|一下|一审|了)|\bapprove\b|\bexamine\b", re.I),
    "generate": re.compile(
        r"转成|转为|转换成|转换为|生成|下推|转(?=销售|订单|发货|发票|收款)|\bconvert\b|\bturn\b|\bgenerate\b", re.I
    ),
    "update": re.compile(
        r"改成|改为|改到|修改为|修改成|更改为|更改成|调整为|调整成|调整到|调成|调到|调为|设为|设置为|设成|换成|"
        r"(?:修改|更改|调整)(?=[^为]+为)|"
        r"\bchange\b|\bset\b|\bupdate\b",
        re.I,
    ),
    "create": re.compile(
        r"(?:做|开|出|来|新建|新开|创建|建|起草|拟)(?:一|1)?(?:个|张|份)?报价|报个价|报价给|给[^，,。；;？?]{2,24}?报价|"
        r"^\s*quote\b|\b(?:create|make|draft|new|prepare)\s+(?:a\s+)?(?:new\s+)?quot(?:e|ation)\b",
        re.I,
    ),
}
# the form an English create verb names (quote → the form aliased "quotation")
CREATE_FORM: dict[str, str] = {"quote": "quotation"}
# a question about a bill, not a change of it (审核了吗, 是谁删除的, has it been approved)
ASK_WORDS = re.compile(
    r"哪|多少|是否|有没有|什么|谁|怎么|为什么|已审|已经审|审核过|审过|没审|未审|待审|了没|状态|记录|"
    r"^\s*(?:is|was|has|have|did|does|who|which|what|how|when|why|whether)\b",
    re.I,
)
# an op undone or not wanted (反审核, 撤销审核, 别删, don't delete): not the op its verb says
NEGATED = re.compile(
    r"反审|弃审|撤销|撤回|取消|不要审|别审|不用审|不要删|别删|不用删|不删|不审|先别|"
    r"\bdon'?t\b|\bdo not\b|\bnever\b|\bundo\b|\bcancel\b|\bunapprove\b|\brevoke\b",
    re.I,
)
ASK_MARKS = re.compile(r"[？?]|吗")
POLITE = re.compile(r"^\s*(?:能不能|能否|可不可以|可以|能|麻烦|请|帮我|帮忙|could you|can you|please)", re.I)
# words a clerk uses for a field's label (价格 for 单价; remark's English words for 备注)
FIELD_SYNONYMS: dict[str, str] = {
    "交货期": "交期",
    "货期": "交期",
    "交货天数": "交期",
    "交期天数": "交期",
    "delivery days": "交期",
    "lead time": "交期",
    "价格": "单价",
    "价钱": "单价",
    "价": "单价",
    "price": "单价",
    "unit price": "单价",
    "quantity": "数量",
    "qty": "数量",
    "note": "备注",
    "comment": "备注",
    "remarks": "备注",
    "有效期": "有效期至",
    "valid until": "有效期至",
    "税点": "税率",
    "tax rate": "税率",
}
