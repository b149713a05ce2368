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
TERM_SYNONYMS: dict[str, str] = {"超期": "逾期", "过期": "逾期", "逾期了": "逾期", "overdue": "逾期", "电话": "联系电话",
                                 "手机": "联系电话", "phone": "联系电话", "contact": "联系人"}
# endings a label drops when a clerk names it: 逾期天数 → 逾期, 客户名称 → 客户
LABEL_SUFFIXES = ("名称", "编码", "天数", "日期", "类别", "(天)", "（天）")

COUNT = re.compile(
    r"(?:多少|几)\s*(?:个|张|条|家|笔|单|位|种|份|名|项)|有多少(?=[^\w]*$)|共几|数量是|how many|number of|count",
    re.I,
)
SUM = re.compile(r"一共|总共|合计|总计|总额|总金额|累计|加起来|总和|共计|in total|total|sum", re.I)
AVG = re.compile(r"平均|均值|average|mean", re.I)
MAX = re.compile(r"最大|最高|最多|最贵|highest|largest|max(?:imum)?|biggest", re.I)
MIN = re.compile(r"最小|最低|最少|最便宜|lowest|smallest|min(?:imum)?", re.I)
GROUP = re.compile(r"按\s*(?P<a>[\w]{1,8}?)\s*(?:汇总|统计|分组|合计|分类|排名|排序)|每个(?P<b>[\w]{1,6})|各(?P<c>[\w]{1,6})|by (?P<d>\w+)", re.I)
ASKS_VALUE = re.compile(r"是多少|是什么|是谁|是几|多少|几|哪个|哪天|什么|what|which|how much", re.I)
MONEY = re.compile(r"钱|款|金额|多少元|营收|销售额|回款|收入|money|amount|revenue", re.I)

# filler around the terms a question is made of; what is left after these and the ERP's own words
# must be a record or a value the ERP holds, or the reader says it did not understand it
FILLER = tuple(
    sorted(
        """请问 请 帮我 帮忙 麻烦 给我 我想 想 知道 一下 查询 查一查 查查 查看 查 看看 看一下 看 列出 列一下 列 显示 统计
        找出 找 告诉 哪些 有哪些 哪几 哪个 哪 什么 是多少 多少 几 是 有 了 的 吗 呢 吧 啊 我们 我的 我 咱们 公司 所有 全部
        现在 目前 当前 还 已经 已 都 总共 一共 共 合计 总计 总额 累计 加起来 总和 共计 平均 最大 最高 最多 最小 最低 最少
        个 张 条 家 笔 单 位 种 份 名 项 在 给 做 新建 新开 新增 开了 开 下了 下 收了 收到 付了 出 过 里 中 和 与 及 或
        情况 记录 信息 数据 列表 清单 明细 其中 分别 按 每个 各 汇总 分组 排名 排序 之 从 到 内 以来 期间 时候 时间 号码
        多 少 大 小 高 低 最 前 后 金额 数 数量 怎么样 如何 哪里 谁 需要 要 被 还有 有没有 没有 是否 能 可以 负责 相关
        show list me all my the of in for with what which who how many much is are was were do does did any there
        total sum count number by per each top and or to from""".split(),
        key=len,
        reverse=True,
    )
)
FILLER_RE = re.compile("|".join(re.escape(w) for w in FILLER), re.I)
