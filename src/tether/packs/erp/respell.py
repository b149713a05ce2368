"""Sound-alike typos, as a pinyin keyboard makes them (客护 for 客户, 发漂 for 发票, 供因商 for
供应商): a word the reader could not place is read as the one word of the ERP's metadata that sounds
the same — by pinyin without tones, with the confusions of a southern ear (zh/z, ch/c, sh/s, n/l,
in/ing, en/eng, an/ang) — and shares a character with it. Never a guess between two: a word that
sounds like several metadata words stays unknown, and the reader names it back. The reading says
what it read the word as, so the person sees the correction."""

from __future__ import annotations

import re

from tether.packs.erp.metadata import FormMeta, Seen
from tether.packs.erp.wording import metadata_words, per_catalog

_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_FUZZY = ((re.compile(r"^([zcs])h"), r"\1"), (re.compile(r"^n"), "l"), (re.compile(r"([aei])ng$"), r"\1n"))
WINDOW = (2, 4)  # the lengths of a word read again
REACH = 3  # how far a window may reach beyond the unknown word, into what was explained


def _syllables(word: str) -> tuple[str, ...]:
    from pypinyin import lazy_pinyin  # loaded on the first typo, not with the reader

    out = []
    for s in lazy_pinyin(word, errors="ignore"):
        for pattern, repl in _FUZZY:
            s = pattern.sub(repl, s)
        out.append(s)
    return tuple(out)


def _index(forms: list[FormMeta]) -> dict[tuple[str, ...], set[str]]:
    """Each metadata word by how it sounds; built once per catalog's forms."""
    return per_catalog("sounds", forms, _build_index)


def _build_index(forms: list[FormMeta]) -> dict[tuple[str, ...], set[str]]:
    index: dict[tuple[str, ...], set[str]] = {}
    for word in metadata_words(forms):
        if WINDOW[0] <= len(word) <= WINDOW[1] and _CJK_RUN.fullmatch(word):
            index.setdefault(_syllables(word), set()).add(word)
    return index


def respelled(text: str, unknown: list[str], forms: list[FormMeta]) -> list[tuple[str, str]]:
    """(typed, meant) for each unknown word that a window around it, in ``text``, misspells — the
    longest such window first; [] when none does or one sounds like several words."""
    index: dict[tuple[str, ...], set[str]] | None = None
    found: list[tuple[str, str]] = []
    for word in unknown:
        at = text.find(word)
        if at < 0 or not _CJK_RUN.search(word):
            continue
        index = index if index is not None else _index(forms)
        fix = _fix(text, at, at + len(word), index)
        if fix is None:
            return []  # one word not read again: the question stays not understood
        if fix not in found:
            found.append(fix)
    return found


def romanized(unknown: list[str], rows: list[Seen]) -> list[tuple[str, str]]:
    """(typed, meant) for each unknown English word that is a value of the data written in pinyin
    (Shanghai → 上海, Which customers are in Shanghai?): the one short value seen that sounds
    exactly so; [] when any word is not one, or is several."""
    index: dict[str, set[str]] | None = None
    found: list[tuple[str, str]] = []
    for word in unknown:
        if not re.fullmatch(r"[A-Za-z]{4,}", word):
            return []
        index = index if index is not None else per_catalog("pinyin", rows, _build_pinyin)
        meant = index.get(word.lower(), set())
        if len(meant) != 1:
            return []
        found.append((word, meant.pop()))
    return found


def _build_pinyin(rows: list[Seen]) -> dict[str, set[str]]:
    from pypinyin import lazy_pinyin

    index: dict[str, set[str]] = {}
    for row in rows:
        for value in row.values.values():
            if isinstance(value, str) and 2 <= len(value) <= 4 and _CJK_RUN.fullmatch(value):
                index.setdefault("".join(lazy_pinyin(value)).lower(), set()).add(value)
    return index


def _fix(text: str, start: int, end: int, index: dict[tuple[str, ...], set[str]]) -> tuple[str, str] | None:
    for size in range(WINDOW[1], WINDOW[0] - 1, -1):
        for left in range(max(0, start - REACH), min(start, len(text) - size) + 1):
            piece = text[left : left + size]
            if left + size < end or not _CJK_RUN.fullmatch(piece):
                continue
            meant = {w for w in index.get(_syllables(piece), ()) if w != piece and set(w) & set(piece)}
            if len(meant) == 1:
                return piece, meant.pop()
            if len(meant) > 1:
                return None
    return None
