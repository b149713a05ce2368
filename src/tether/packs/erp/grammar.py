"""Which of the words the metadata, the data, a date, a comparison or a number left unexplained
carry no meaning of their own (帮我, 发, 叫, 那边, 一下, 来着, 块), read as a linguist would: the
leftover is segmented with jieba's part-of-speech tagger (``jieba.posseg``), and a word is a
function word by its class — particles (u*), modal particles (y), interjections (e),
onomatopoeia (o), punctuation, prepositions (p), conjunctions (c) and pronouns (r) — or by a
short closed list where the class alone says too little (the light verbs of a request: 帮, 给,
看, 查, 问, 告诉, 发, 叫; harmless adverbs of degree, time and mood; measure words after 几/多少).

It must never let a word through that would change the answer: negation (不, 没, 非), exclusion
(除了, 以外), restriction (只, 仅, 就), comparison and range (比, 从, 到, 以来, 之前), approximation
(大约), frequency (经常), another time (即将, 刚刚) and reference to someone not named (他, 那个,
这些) are content, whatever their class; nouns, adjectives, idioms and every other verb are
content; a word the dictionary does not know is content. A content word nobody explains is
named back.

The tokenizer is jieba's own dictionary in a private ``jieba.Tokenizer`` (``find_forms``'
segmentation stays as it is), loaded once per process on the first leftover that needs it (~1 s)
and taught the forms' words and the data's values as user words, so they stay whole."""

from __future__ import annotations

import logging
import re
import threading
import warnings
from collections.abc import Iterable
from typing import Any


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# content words, whatever their class: each would change the answer if dropped
BLOCKING = _words(
    "不 没 没有 未 非 无 别 勿 莫 甭 不要 不用 不必 未必 并非 并不 从不 从未 尚未 还未 还没 还没有 不是 而是 "
    "只 仅 仅仅 只是 只有 只要 光 就 才 单 单单 唯独 惟独 独 另 另外 别的 其他 其它 其余 "
    "除 除了 除开 除去 以外 之外 除外 或 或者 还是 要么 但 但是 可是 不过 如果 假如 要是 除非 否则 "
    "不论 无论 不管 虽然 即使 或是 若 若是 倘若 要不 "
    "从 自 自从 自打 打 由 到 至 直到 截至 截止 以来 比 比起 较 较之 离 距 距离 趁 经过 通过 随着 当 往 朝 "
    "沿 沿着 为了 将 "
    "再 又 更 更加 比较 太 过于 至少 至多 最多 最少 最 几乎 差不多 大约 大概 约 左右 上下 将要 即将 快要 就要 "
    "刚 刚刚 刚才 曾 曾经 尚 一直 始终 从来 总是 常 常常 经常 通常 偶尔 往往 逐月 逐一 依次 陆续 首次 再次 "
    "他 她 它 他们 她们 它们 其 这 那 这个 那个 这些 那些 该 此 某 某个 某些 别人 人家 别家 他人 对方 各自 每月 "
    "为什么 为何 为啥 怎么 咋 多久 多长 多远 何时 等 等等 一样 似的"
)
# light verbs of a request (帮我查一下, 发我, 叫什么): they ask, they name nothing
LIGHT_VERBS = _words(
    "帮 帮忙 给 看 看看 瞧 瞧瞧 瞅 瞅瞅 查 查查 查询 查看 查找 搜 搜索 问 问问 告诉 告知 发 发给 叫 称 说 说说 讲 讲讲 "
    "想 想要 要 需要 知道 了解 列 列出 列举 显示 找 找找 拿 弄 整理 提供 确认 核对 来 去 有 是 在 能 能否 可以 "
    "会 麻烦 请 请问 劳驾 拜托 谢谢 谢 您好 你好 报 看到 有没有 放 放在 存放 摆 发到 送到 寄到"
)
# adverbs of degree, time and mood that leave a reading as it is (还, 都, 到底, 现在)
HARMLESS = _words(
    "还 都 也 已经 已 共 一共 总共 一起 到底 究竟 其实 确实 真的 具体 分别 一般 大致 马上 立即 立刻 尽快 赶紧 "
    "务必 一定 必须 顺便 麻烦 现在 目前 当前 如今 眼下 此刻 里 中 内 里面 里头 当中 之中 上 一下 一些 一点 "
    "一点儿 有点 呀 啊 哦 哈 嗯 呃 您 咱 咱们 手上 手里 手头 全"
)
MEASURE = "个张条家笔单位种份名项次批台桶米吨根盒只件套块元下些点号"  # 几号: which day
# measure words and numerals that ask, not count: 几台, 多少块, 一下 (a number stays content)
_MEASURE = re.compile(rf"(?:几|多少)?[{MEASURE}]?|一下|一些|一点儿?")
_PUNCT = re.compile(r"[\W_]+")
_CJK = re.compile(r"[\u4e00-\u9fff]")
FUNCTION_CLASSES = ("u", "y", "e", "o", "p", "c", "r")  # jieba's tags, by their first letter
LEARN_MAX = 200_000  # user words taught at most, over every catalog a process reads


class _Segmenter:
    """jieba's dictionary with its part-of-speech tags, loaded on first use, taught user words."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokenizer: Any = None
        self._tags: dict[str, str] = {}
        self._learned: set[str] = set()
        self._taught: set[int] = set()  # ids of the vocabularies taught (a catalog's are kept a minute)

    def _load(self) -> None:
        with warnings.catch_warnings():  # jieba's sources trip invalid-escape warnings when first compiled
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", SyntaxWarning)
            import jieba

        logger = logging.getLogger("jieba")
        level = logger.level
        logger.setLevel(logging.WARNING)
        try:
            tokenizer = jieba.Tokenizer()
            tokenizer.initialize()
        finally:
            logger.setLevel(level)
        # posseg's own table (word freq tag per line of jieba's dictionary), read without importing
        # jieba.posseg, whose HMM tables (unused: the cut is HMM-free) cost seconds to compile
        tags: dict[str, str] = {}
        with open(tokenizer.get_dict_file().name, encoding="utf-8") as lines:
            for line in lines:
                word, _, tag = line.rstrip("\n").split(" ")
                tags[word] = tag
        self._tokenizer, self._tags = tokenizer, tags

    def learn(self, key: int, words: Iterable[str]) -> None:
        with self._lock:
            if self._tokenizer is None:
                self._load()
            if key in self._taught:
                return
            for word in words:
                if len(self._learned) >= LEARN_MAX:
                    break
                if len(word) >= 2 and _CJK.search(word) and word not in self._learned:
                    self._tokenizer.add_word(word)
                    self._tags[word] = "nz"
                    self._learned.add(word)
            self._taught.add(key)

    def cut(self, text: str) -> list[tuple[str, str]]:
        """Words and their tags, as ``jieba.posseg`` cuts without HMM: a word the dictionary
        lacks is cut into characters, each tagged ``x`` where the dictionary does not know it."""
        return [(word, self._tags.get(word, "x")) for word in self._tokenizer.cut(text, HMM=False)]


_SEGMENTER = _Segmenter()


def is_function_word(word: str, tag: str) -> bool:
    """A word that carries no meaning of its own in a question (see the module's docstring)."""
    if word in BLOCKING:
        return False
    if word in LIGHT_VERBS or word in HARMLESS:
        return True
    if not _CJK.search(word):
        return bool(_PUNCT.fullmatch(word))  # punctuation and spaces; a Latin word or a number is content
    if _MEASURE.fullmatch(word):
        return True
    return tag[:1] in FUNCTION_CLASSES


def content_words(piece: str, vocabulary: Iterable[str], key: int) -> list[tuple[str, int]]:
    """The runs of ``piece`` that carry meaning (neighbouring content words stay one run), with
    their offsets in it; the function words between them are dropped. ``vocabulary``: the words
    the tokenizer keeps whole (the forms' words, the data's values), taught once per ``key``."""
    _SEGMENTER.learn(key, vocabulary)
    runs: list[tuple[str, int]] = []
    at, end = 0, -1  # end: where the last run stops
    for word, tag in _SEGMENTER.cut(piece):
        start = piece.find(word, at)
        at = start + len(word)
        if not word.strip() or is_function_word(word, tag):
            continue
        if runs and start == end:
            runs[-1] = (runs[-1][0] + word, runs[-1][1])
        else:
            runs.append((word, start))
        end = at
    return runs
