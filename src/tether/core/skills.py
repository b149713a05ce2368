"""Skills: SKILL.md folders (agentskills.io format), their registry and the router.

A skill is YAML frontmatter (``name``, ``description``, ``allowed-tools``, optional ``keywords``,
``plan`` and ``yields-to``) plus a markdown playbook. ``yields-to`` names the skills a skill gives
way to when the keyword rules pick both (a look-up's "会话" inside an analysis request). Invalid
skills are reported with file and reason, never silently dropped. Routing asks the model first and falls back to keyword rules when the answer is
empty, fails or names unknown ids; the outcome says which path chose what and why.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tether.core.messages import ModelRequest
from tether.core.ports import ChatModel
from tether.errors import TetherError

NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    allowed_tools: tuple[str, ...]
    body: str
    keywords: tuple[str, ...] = ()
    plan: tuple[dict[str, Any], ...] = ()
    answer: str | None = None
    plan_order: int = 50  # where this skill's plan goes when several skills are selected
    path: str = ""
    audience: tuple[str, ...] = ()  # identity providers offered this skill (``identity:``); empty: everyone
    yields_to: tuple[str, ...] = ()  # skills this one gives way to when the keyword rules pick both

    def offered_to(self, provider: str | None) -> bool:
        return provider is None or not self.audience or provider in self.audience


@dataclass(frozen=True)
class SkillIssue:
    path: str
    reason: str


def _frontmatter(text: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---"):
        raise ValueError("missing YAML frontmatter (the file must start with '---')")
    parts = text.split("\n---", 1)
    if len(parts) != 2:
        raise ValueError("frontmatter is not closed by a '---' line")
    meta = yaml.safe_load(parts[0][3:]) or {}
    if not isinstance(meta, dict):
        raise ValueError("frontmatter must be a YAML mapping")
    return meta, parts[1].lstrip("-").lstrip("\n")


def _str_list(meta: dict[str, Any], key: str) -> tuple[str, ...]:
    value = meta.get(key) or []
    if isinstance(value, str):
        value = value.replace(",", " ").split()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"'{key}' must be a list of strings")
    return tuple(value)


def parse_skill(path: Path) -> Skill:
    """Parse one SKILL.md; raises ValueError with the reason when it is invalid."""
    meta, body = _frontmatter(path.read_text(encoding="utf-8"))
    name, description = meta.get("name"), meta.get("description")
    if not isinstance(name, str) or not NAME_RE.match(name) or len(name) > MAX_NAME:
        raise ValueError(f"'name' must be lowercase letters, digits and single hyphens, at most {MAX_NAME} chars")
    if name != path.parent.name:
        raise ValueError(f"'name' {name!r} must match its folder name {path.parent.name!r}")
    if not isinstance(description, str) or not description.strip():
        raise ValueError("'description' is required: say what the skill does and when to use it")
    if len(description) > MAX_DESCRIPTION:
        raise ValueError(f"'description' is {len(description)} chars; the limit is {MAX_DESCRIPTION}")
    plan = meta.get("plan") or []
    if not isinstance(plan, list) or not all(
        isinstance(s, dict) and (isinstance(s.get("tool"), str) or isinstance(s.get("steps"), str)) for s in plan
    ):
        raise ValueError("'plan' must be a list of {tool: name, args: {...}} steps (or {steps: '${extract.x}'})")
    answer = meta.get("answer")
    order = meta.get("plan-order", 50)
    if not isinstance(order, int):
        raise ValueError("'plan-order' must be an integer (lower runs first)")
    return Skill(
        name=name,
        description=description.strip(),
        allowed_tools=_str_list(meta, "allowed-tools"),
        body=body.strip(),
        keywords=_str_list(meta, "keywords"),
        plan=tuple(plan),
        answer=answer if isinstance(answer, str) else None,
        plan_order=order,
        path=str(path),
        audience=_str_list(meta, "identity"),
        yields_to=_str_list(meta, "yields-to"),
    )


def load_skills(roots: list[Path]) -> tuple[list[Skill], list[SkillIssue]]:
    skills: list[Skill] = []
    issues: list[SkillIssue] = []
    seen: set[str] = set()
    for root in roots:
        for path in sorted(Path(root).glob("*/SKILL.md")):
            try:
                skill = parse_skill(path)
            except (ValueError, yaml.YAMLError, OSError) as exc:
                issues.append(SkillIssue(str(path), str(exc)))
                continue
            if skill.name in seen:
                issues.append(SkillIssue(str(path), f"duplicate skill name {skill.name!r}"))
                continue
            seen.add(skill.name)
            skills.append(skill)
    return skills, issues


@dataclass
class SkillRegistry:
    skills: list[Skill] = field(default_factory=list)
    issues: list[SkillIssue] = field(default_factory=list)

    def get(self, name: str) -> Skill | None:
        return next((s for s in self.skills if s.name == name), None)

    def ids(self) -> list[str]:
        return [s.name for s in self.skills]

    def allowed_tools(self, selected: list[str]) -> frozenset[str]:
        tools: set[str] = set()
        for name in selected:
            skill = self.get(name)
            if skill is not None:
                tools.update(skill.allowed_tools)
        return frozenset(tools)


@dataclass
class Selection:
    skill_ids: list[str]
    path: str  # "model" | "rules"
    reason: str

    def to_event(self) -> dict[str, Any]:
        return {"selectedSkillIds": self.skill_ids, "path": self.path, "reason": self.reason}


def select_by_rules(registry: SkillRegistry, query: str, provider: str | None = None) -> Selection:
    text = query.lower()
    chosen = []
    hits: list[str] = []
    for s in registry.skills:
        if not s.offered_to(provider):
            continue
        words = [k for k in s.keywords if k.lower() in text]
        if words:
            chosen.append(s.name)
            hits.append(f"{s.name}: {', '.join(words)}")
    for name in list(chosen):
        skill = registry.get(name)
        winner = next((w for w in skill.yields_to if w in chosen), None) if skill else None
        if winner is not None:
            chosen.remove(name)
            hits.append(f"{name} yields to {winner}")
    reason = "keyword match (" + "; ".join(hits) + ")" if hits else "no skill keyword found in the request"
    return Selection(chosen, "rules", reason)


ROUTER_PROMPT = """You route a user's request to skills. Answer with JSON only:
{"selectedSkillIds": ["<id>", ...], "reason": "<why>"}
Choose only ids from this list; choose none if nothing fits.
"""


class SkillRouter:
    def __init__(self, registry: SkillRegistry, model: ChatModel | None, use_model: bool = True) -> None:
        self.registry = registry
        self.model = model
        self.use_model = use_model and model is not None

    async def select(self, query: str, global_context: dict[str, Any], provider: str | None = None) -> Selection:
        """``provider`` (the caller's identity provider) limits the choice to the skills offered to it."""
        if not self.registry.skills:
            return Selection([], "rules", "no skills are installed")
        if not self.use_model or self.model is None:
            return select_by_rules(self.registry, query, provider)
        why = await self._ask_model(query, global_context, provider)
        if isinstance(why, Selection):
            return why
        fallback = select_by_rules(self.registry, query, provider)
        fallback.reason = f"model routing {why}; fell back to rules: {fallback.reason}"
        return fallback

    async def _ask_model(self, query: str, global_context: dict[str, Any], provider: str | None) -> Selection | str:
        offered = [s for s in self.registry.skills if s.offered_to(provider)]
        catalogue = "\n".join(f"- {s.name}: {s.description}" for s in offered)
        messages = [
            {"role": "system", "content": ROUTER_PROMPT + catalogue},
            {"role": "user", "content": query},
        ]
        assert self.model is not None
        try:
            reply = await self.model.chat(ModelRequest(messages, [], global_context=global_context, purpose="route"))
        except TetherError as exc:
            return f"failed ({exc.message})"
        text = (reply.content or "").strip()
        match = re.search(r"\{.*\}", text, re.S)
        if not match:
            return "returned no JSON choice"
        try:
            answer = json.loads(match.group(0))
        except json.JSONDecodeError:
            return "returned invalid JSON"
        ids = answer.get("selectedSkillIds") if isinstance(answer, dict) else None
        if not isinstance(ids, list) or not ids:
            return "returned an empty choice"
        unknown = [i for i in ids if i not in {s.name for s in offered}]
        if unknown:
            return f"named unknown skill id(s) {unknown}"
        return Selection([str(i) for i in ids], "model", str(answer.get("reason") or "model choice"))
