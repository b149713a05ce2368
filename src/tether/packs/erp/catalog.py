"""``find_forms``'s search: BM25 over jieba tokens of each form's name, aliases and description,
plus fuzzy matching of the name, over the caller's granted forms only."""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import jieba

jieba.setLogLevel(60)
_WORD = re.compile(r"[\w\u4e00-\u9fff]+")
K1, B = 1.5, 0.75


def tokens(text: str) -> list[str]:
    words: list[str] = []
    for part in _WORD.findall(text.lower()):
        words += [w for w in jieba.lcut(part) if w.strip()]
        if len(part) > 1 and re.search(r"[\u4e00-\u9fff]", part):
            words += [part[i : i + 2] for i in range(len(part) - 1)]  # bigrams: 应收 in 应收账龄
    return words


@dataclass(frozen=True)
class FormEntry:
    form_id: str
    name: str
    aliases: tuple[str, ...]
    description: str
    module: str

    @classmethod
    def from_erp(cls, row: dict[str, Any]) -> FormEntry:
        aliases = row.get("aliases") or ()
        if isinstance(aliases, str):
            aliases = [a for a in re.split(r"[,，;；/\s]+", aliases) if a]
        return cls(
            str(row.get("formId")),
            str(row.get("name") or ""),
            tuple(str(a) for a in aliases),
            str(row.get("description") or ""),
            str(row.get("module") or ""),
        )

    def card(self) -> dict[str, Any]:
        return {
            "formId": self.form_id,
            "name": self.name,
            "aliases": list(self.aliases),
            "module": self.module,
            "answers": self.description,
        }


def search(forms: list[FormEntry], query: str, limit: int = 8) -> list[dict[str, Any]]:
    """Granted forms ranked for ``query``; an empty query lists them all."""
    if not query.strip():
        return [f.card() for f in forms[:limit]]
    docs = [tokens(" ".join([f.name, *f.aliases, f.name, f.description])) for f in forms]
    avg = sum(len(d) for d in docs) / max(len(docs), 1)
    df: Counter[str] = Counter(w for d in docs for w in set(d))
    q = tokens(query)
    scored = []
    for form, doc in zip(forms, docs, strict=True):
        tf = Counter(doc)
        score = 0.0
        for w in q:
            if w in tf:
                idf = math.log(1 + (len(docs) - df[w] + 0.5) / (df[w] + 0.5))
                score += idf * tf[w] * (K1 + 1) / (tf[w] + K1 * (1 - B + B * len(doc) / max(avg, 1)))
        names = [form.name, *form.aliases]
        fuzzy = max(difflib.SequenceMatcher(None, query, n).ratio() for n in names)
        if any(n and n in query for n in names):
            fuzzy = max(fuzzy, 1.0)
        score += 3.0 * fuzzy if fuzzy >= 0.5 else 0.0
        if score > 0:
            scored.append((score, form))
    scored.sort(key=lambda p: -p[0])
    return [{**f.card(), "score": round(s, 2)} for s, f in scored[:limit]]
