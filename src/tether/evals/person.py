"""The simulated person: logs in, types a task's turns over the real HTTP API, answers what the
agent asks the way the task says (an option, free text, a form's values, a new login), and
decides each write proposal — confirm only what the task wants written (a proposal on a form its
reference writes), cancel the rest. Every op it confirms is noted: a write that reached the ERP
without one is a safety violation (``safety.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from tether.erp_demo import facts as erp_facts
from tether.evals import tryton_site
from tether.evals.tasks import Task, Turn

WAITING = ("WAITING_USER_INPUT", "WAITING_CONFIRMATION")
DONE = ("SUCCEEDED", "FAILED", "CANCELLED")
ASKING = ("？", "?", "请指明", "请选择", "哪一个", "哪个", "which")  # a question asked in words


@dataclass(slots=True)
class Conversation:
    """What one trial did, as the person saw it over HTTP."""

    session_id: str = ""
    status: str = ""
    session: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)  # every credential the person held
    confirmed: list[str] = field(default_factory=list)  # op ids it confirmed
    cancelled: list[str] = field(default_factory=list)
    questions: int = 0
    replays: list[dict[str, Any]] = field(default_factory=list)
    stuck: str = ""  # why the person stopped early (a question it had no answer for, a time-out)


def _option_text(option: Any) -> str:
    return str(option.get("label") or option.get("value")) if isinstance(option, dict) else str(option)


def reply_to(options: list[str], reply: str) -> str:
    """What a person types back to a question with options: the one option that holds their reply
    (青岛正泰精密五金有限公司 → "C0031 青岛正泰精密五金有限公司"), as a person clicks the option they
    mean; several or none of them: the reply as typed, and the agent must make sense of it."""
    if reply in options:
        return reply
    holding = [o for o in options if reply.strip() and reply.strip() in o]
    return holding[0] if len(holding) == 1 else reply


class Person:
    def __init__(
        self, url: str, task: Task, write_forms: set[str], timeout_s: float = 300.0, tryton_rpc: str = ""
    ) -> None:
        self.url = url
        self.tryton_rpc = tryton_rpc  # a Tryton task: its trytond's JSON-RPC, where a session is revoked
        self.task = task
        self.write_forms = write_forms  # forms the task wants written: proposals on others are cancelled
        self.deadline = time.monotonic() + timeout_s
        self.out = Conversation()
        self.http = httpx.Client(base_url=url, timeout=timeout_s)
        self.erp_token = ""

    def close(self) -> None:
        self.http.close()

    def log_in(self) -> None:
        if self.task.pack == "finance":
            token = self.task.user
        else:
            password = tryton_site.passwords()[self.task.user] if self.task.erp == "tryton" else erp_facts.PASSWORD
            r = self.http.post("/api/auth/login", json={"username": self.task.user, "password": password})
            r.raise_for_status()
            token = self.erp_token = str(r.json()["token"])
        self.out.tokens.append(token)
        self.http.headers["Authorization"] = f"Bearer {token}"

    def lapse_login(self) -> None:
        """The ERP token is revoked behind tether's back (a login that expired mid-conversation)."""
        if self.erp_token and self.task.erp == "tryton":
            tryton_site.log_out(self.tryton_rpc, self.erp_token)
        elif self.erp_token:
            self.http.post("/erp/logout", headers={"Authorization": self.erp_token})

    def converse(self) -> Conversation:
        self.log_in()
        for turn in self.task.turns:
            if self.out.stuck:
                break
            if turn.relogin:
                self.lapse_login()
            if turn.replay is not None:
                self._replay(turn.replay)
                continue
            view = self._say(turn.say)
            asked = self.out.questions
            self._follow(view, turn)
            if self._asked_in_text(turn, asked):  # a question in the answer's words: type the reply
                self.out.questions += 1
                self._follow(self._say(turn.reply or ""), turn)
        if self.out.session_id:
            self.out.session = self._get(f"/api/agent/sessions/{self.out.session_id}")
            self.out.status = self.out.session.get("status", "")
            runtime = self._get(f"/api/agent/sessions/{self.out.session_id}/runtime")
            self.out.events = runtime.get("events") or []
        return self.out

    def _asked_in_text(self, turn: Turn, asked_before: int) -> bool:
        """The turn ended with a question in words (no question card) and the task has a reply."""
        if turn.reply is None or self.out.questions > asked_before or self.out.stuck:
            return False
        view = self._get(f"/api/agent/sessions/{self.out.session_id}")
        last: dict[str, Any] = next(
            (m for m in reversed(view.get("transcript") or []) if m.get("role") == "assistant"), {}
        )
        return view.get("status") == "SUCCEEDED" and any(q in str(last.get("content") or "") for q in ASKING)

    def _get(self, path: str) -> dict[str, Any]:
        r = self.http.get(path)
        r.raise_for_status()
        body: dict[str, Any] = r.json()
        return body

    def _say(self, message: str) -> dict[str, Any]:
        if not self.out.session_id:
            r = self.http.post("/api/agent/sessions", json={"message": message})
        else:
            r = self.http.post(f"/api/agent/sessions/{self.out.session_id}/messages", json={"message": message})
        r.raise_for_status()
        view: dict[str, Any] = r.json()
        self.out.session_id = str(view["sessionId"])
        return view

    def _follow(self, view: dict[str, Any], turn: Turn) -> None:
        """Answer what the agent asks until the turn ends (or the person has nothing to answer)."""
        answered_question = False
        while time.monotonic() < self.deadline:
            status = view.get("status")
            pending = view.get("pendingInteraction") or {}
            if status in DONE:
                return
            if status == "WAITING_USER_INPUT" and pending.get("kind") == "login":
                self.log_in()
                view = self._say(turn.say)  # logged in again: the same request once more
                continue
            if status == "WAITING_USER_INPUT" and pending:
                self.out.questions += pending.get("kind") == "question"
                answer = self._answer(pending, turn, answered_question)
                if answer is None:
                    self.out.stuck = f"the agent asked ({pending.get('kind')}) and the task gives no answer"
                    return
                answered_question = True
                r = self.http.post(
                    f"/api/agent/sessions/{self.out.session_id}/interactions/{pending['interactionId']}", json=answer
                )
                if r.status_code == 422:
                    self.out.stuck = f"the form refused the task's values: {r.text[:300]}"
                    return
                r.raise_for_status()
                view = r.json()
                continue
            if status == "WAITING_CONFIRMATION" and pending.get("kind") == "proposal":
                if not self._decide(pending["payload"], turn):
                    return  # left waiting, as the task says
                view = self._wait_moved(pending["interactionId"])
                continue
            time.sleep(0.1)
            view = self._get(f"/api/agent/sessions/{self.out.session_id}")
        self.out.stuck = "timed out waiting for the session"

    def _answer(self, pending: dict[str, Any], turn: Turn, answered: bool) -> dict[str, Any] | None:
        if pending.get("kind") == "form":
            return None if turn.values is None else {"values": turn.values}
        if answered and turn.pick is None and turn.reply is None:
            return None
        options = [_option_text(o) for o in (pending.get("payload") or {}).get("options") or []]
        if turn.pick is not None and turn.pick <= len(options):
            return {"answer": options[turn.pick - 1]}
        if turn.reply is not None:
            return {"answer": reply_to(options, turn.reply)}
        return None

    def _decide(self, proposal: dict[str, Any], turn: Turn) -> bool:
        """Confirm a proposal the task wants, cancel one it does not; False: leave it waiting."""
        op_id = str(proposal["opId"])
        if turn.proposal == "leave":
            return False
        wanted = turn.proposal == "confirm" and str(proposal.get("formId")) in self.write_forms
        if wanted:
            self.out.confirmed.append(op_id)
            op = self.http.post(f"/api/ops/{op_id}/confirm").json()
            while op.get("state") == "processing" and time.monotonic() < self.deadline:
                time.sleep(0.1)
                op = self._get(f"/api/ops/{op_id}")
        else:
            self.out.cancelled.append(op_id)
            self.http.post(f"/api/ops/{op_id}/cancel")
        return True

    def _wait_moved(self, interaction_id: str) -> dict[str, Any]:
        """The session after a proposal's outcome resumed it."""
        while True:
            view = self._get(f"/api/agent/sessions/{self.out.session_id}")
            pending = view.get("pendingInteraction") or {}
            if pending.get("interactionId") != interaction_id or time.monotonic() > self.deadline:
                return view
            time.sleep(0.1)

    def _replay(self, params: dict[str, Any]) -> None:
        session = self._get(f"/api/agent/sessions/{self.out.session_id}") if self.out.session_id else {}
        dsl_id = session.get("lastDslId")
        if not dsl_id:
            self.out.replays.append({"status": "NO_DSL", "error": "the session compiled no workflow to replay"})
            return
        r = self.http.post(f"/api/agent/dsl/{dsl_id}/execute", json=params)
        self.out.replays.append(
            r.json() if r.status_code == 200 else {"status": f"HTTP {r.status_code}", "error": r.text}
        )
