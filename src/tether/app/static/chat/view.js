// One conversation, rebuilt from its event history and kept up to date from the live stream:
// user messages, each turn's tool timeline, the streamed then final answer (Markdown), cards for
// questions, forms, write proposals, op results, links and the compiled workflow. Events are
// applied in id order and each id once, so a reload or a reconnect shows everything once.

import { h, clear, announce } from "./dom.js";
import { codedOr, t, toolError } from "./i18n.js";
import { renderMarkdown } from "./markdown.js";
import { questionCard, formCard, proposalCard, opCard, linkCard, workflowPanel } from "./cards.js";

const BUSY = new Set(["RUNNING", "WAITING_ASYNC_CALLBACK", "WAITING_CONFIRMATION"]);
const WAITING_OPS = new Set(["pending", "processing", "awaiting_approval"]); // not final yet: the business system or an approver may move them on
const POLL_MS = 10_000;
const OPEN_ROW = new Set(["requested", "running", "waiting"]);

export class Conversation {
  constructor(root, ctx) {
    this.root = root;
    this.ctx = { ...ctx, onOpChange: () => this.opsChanged() }; // { sessionId, post, get, onStatus, onLoginExpired, onLink, resend }
    this.lastSeq = 0;
    this.status = null;
    this.lastError = null;
    this.poll = null;
    this.reconciling = null;
    this.disposed = false;
    this.eventStatus = null;
    this.block = null; // the assistant block receiving events
    this.rows = new Map(); // toolCallId -> timeline row
    this.cards = new Map(); // interactionId -> card
    this.ops = new Map(); // opId -> op view
    this.opRows = new Map(); // opId -> the toolCallId of the proposal's timeline row
    this.loginPending = false;
    this.lastUser = null;
    clear(root);
    this.thinking = h("div", { class: "thinking", hidden: true }, h("span", { class: "spinner", "aria-hidden": "true" }), t("thinking"));
    root.append(this.thinking);
  }

  get busy() {
    return BUSY.has(this.status);
  }

  handle(event, live) {
    if (event.id <= this.lastSeq) return; // each event once
    this.lastSeq = event.id;
    const data = event.data || {};
    const fn = HANDLERS[event.type];
    if (fn) fn.call(this, data, event, live);
    this.root.append(this.thinking); // keep it last
    if (live) this.scroll();
  }

  // after the history is applied: the status the events tell (the snapshot may be a moment older)
  settle(session) {
    const status = this.eventStatus || session.status;
    if (status === "FAILED") this.lastError = this.lastError || codedOr(session.lastErrorCode, session.lastError) || null;
    this.setStatus(status, false);
    if (this.loginPending && status === "WAITING_USER_INPUT") this.ctx.onLoginExpired(false, this.loginPending);
    this.scroll();
  }

  closeCards() {
    for (const card of this.cards.values()) card.close?.();
  }

  // Re-reads the ops not final yet (``waitingOnly``: those confirmed and waiting for the business
  // system, e.g. a manual op the user saves in the ERP's own form); one pass at a time.
  reconcileOps(waitingOnly = false) {
    if (this.reconciling || this.disposed) return this.reconciling;
    this.reconciling = (async () => {
      for (const [opId, view] of this.ops) {
        if (view.final || (waitingOnly && !WAITING_OPS.has(view.state))) continue;
        try {
          const op = await this.ctx.get(`/api/ops/${encodeURIComponent(opId)}`);
          if (!this.disposed) view.update(op);
        } catch {
          /* the ops API may not exist for this op: keep what the events said */
        }
      }
    })().finally(() => { this.reconciling = null; });
    return this.reconciling;
  }

  // What the ops on the page add to the status: one waiting in the business system, one still
  // processing, or the latest one failed.
  opSummary() {
    const states = [...this.ops.values()].map((v) => v.state);
    if (states.includes("awaiting_approval")) return "awaiting_approval"; // a confirmed write waits for its approvers
    if (states.includes("pending")) return "pending";
    if (states.includes("processing")) return "processing";
    return states.length && states[states.length - 1] === "failed" ? "failed" : null;
  }

  opsChanged() {
    if (this.disposed) return;
    for (const [opId, view] of this.ops) { // the proposal's timeline row says what it waits for now
      const row = view.state === "awaiting_approval" && this.rows.get(this.opRows.get(opId));
      if (row) this.setRow(row, "waiting", t("write_awaiting_approval"));
    }
    if (this.status) this.ctx.onStatus(this.status, { ops: this.opSummary(), lastError: this.lastError });
    const waiting = [...this.ops.values()].some((v) => !v.final && WAITING_OPS.has(v.state));
    if (!waiting) {
      window.clearTimeout(this.poll);
      this.poll = null;
    } else if (!this.poll) {
      this.poll = window.setTimeout(async () => {
        if (!document.hidden) await this.reconcileOps(true); // a hidden page catches up when it is shown again
        this.poll = null;
        this.opsChanged();
      }, POLL_MS);
    }
  }

  dispose() {
    this.disposed = true;
    window.clearTimeout(this.poll);
    this.poll = null;
  }

  scroll() {
    this.root.scrollTop = this.root.scrollHeight;
  }

  setStatus(status, live = true) {
    this.status = status;
    this.eventStatus = status;
    this.thinking.hidden = status !== "RUNNING" || Boolean(this.block && this.block.stream);
    this.ctx.onStatus(status, { live, ops: this.opSummary(), lastError: status === "FAILED" ? this.lastError : null });
  }

  // ---- building blocks --------------------------------------------------------------------------

  userBubble(text) {
    this.block = null; // what follows starts a new assistant block
    this.lastUser = text;
    const body = h("div", { class: "text" });
    body.textContent = text;
    this.root.append(h("article", { class: "msg user", "aria-label": t("you") }, h("div", { class: "bubble" }, body)));
  }

  current(event) {
    if (!this.block || this.block.turnId !== event.turnId) {
      const flow = h("div", { class: "flow" });
      const head = h("div", { class: "block-head" });
      const el = h("article", { class: "msg assistant", "aria-label": t("assistant"), dataset: { turn: event.turnId || "" } },
        h("div", { class: "avatar", "aria-hidden": "true" }, "◆"),
        h("div", { class: "bubble" }, head, flow));
      this.root.append(el);
      this.block = { turnId: event.turnId, el, head, flow, timeline: null, stream: null, errors: 0 };
    }
    return this.block;
  }

  timeline(block) {
    if (!block.timeline) {
      const list = h("ol", { class: "tool-list" });
      const summary = h("summary", {}, t("tools", { n: 0 }));
      const details = h("details", { class: "timeline" }, summary, list);
      block.head.append(details);
      block.timeline = { details, summary, list, count: 0 };
    }
    return block.timeline;
  }

  row(data, event) {
    let row = this.rows.get(data.toolCallId);
    if (!row) {
      const tl = this.timeline(this.current(event));
      tl.count += 1;
      tl.summary.textContent = t("tools", { n: tl.count });
      const state = h("span", { class: "tool-state" });
      const name = h("span", { class: "tool-name" });
      name.textContent = data.toolId || "?";
      const time = h("span", { class: "tool-time" });
      const body = h("div", { class: "tool-body" });
      const summary = h("summary", {}, h("span", { class: "dot", "aria-hidden": "true" }), name, state, time);
      const el = h("li", { class: "tool-row", dataset: { call: data.toolCallId, tool: data.toolId || "" } }, h("details", {}, summary, body));
      tl.list.append(el);
      row = { el, state, time, body, tl, name: data.toolId || "?", started: null, args: null, status: null };
      this.rows.set(data.toolCallId, row);
    }
    return row;
  }

  // the model's reasoning before a decision: a collapsed "thinking" item in the timeline, never the answer
  thought(block, reasoning) {
    const tl = this.timeline(block);
    const label = h("span", { class: "tool-name" });
    label.textContent = t("thought");
    const pre = h("pre", { class: "reasoning" });
    pre.textContent = reasoning;
    const summary = h("summary", {}, h("span", { class: "dot", "aria-hidden": "true" }), label);
    const body = h("div", { class: "tool-body" }, h("div", { class: "tool-detail" }, pre));
    tl.list.append(h("li", { class: "tool-row thought", dataset: { status: "thought" } }, h("details", {}, summary, body)));
    if (!tl.count) tl.summary.textContent = t("thought"); // no tool yet: the timeline holds thinking only
  }

  setRow(row, status, label) {
    row.status = status;
    row.el.dataset.status = status;
    row.state.textContent = label;
    // the collapsed timeline still says what is happening now
    const tl = row.tl;
    const open = [...tl.list.children].filter((li) => ["requested", "running", "waiting"].includes(li.dataset.status));
    const now = open.length ? open[open.length - 1] : null;
    tl.summary.textContent = t("tools", { n: tl.count });
    tl.details.dataset.active = now ? "true" : "false";
    if (now) {
      const live = h("span", { class: "tool-now" }, h("span", { class: "spinner", "aria-hidden": "true" }), ` ${now.dataset.tool} · ${now.querySelector(".tool-state").textContent}`);
      tl.summary.append(live);
    }
  }

  // a turn that ended while a call was still open: that call will not report any more
  interruptRows() {
    for (const row of this.rows.values()) {
      if (OPEN_ROW.has(row.status)) this.setRow(row, "interrupted", t("toolInterrupted"));
    }
  }

  detail(row, label, value, cls = "") {
    const pre = h("pre", { class: cls });
    pre.textContent = typeof value === "string" ? value : JSON.stringify(value, null, 2);
    row.body.append(h("div", { class: "tool-detail" }, h("div", { class: "label" }, label), pre));
  }

  note(event, text, cls = "note") {
    const el = h("p", { class: cls });
    el.textContent = text;
    this.current(event).flow.append(el);
    return el;
  }

  endStream(block, render) {
    if (!block || !block.stream) return;
    const { el, text } = block.stream;
    block.stream = null;
    el.classList.remove("streaming");
    if (render && text.trim()) {
      const md = h("div", { class: "markdown interim" }, renderMarkdown(text, { onLink: this.ctx.onLink }));
      el.replaceWith(md);
    }
  }

  answer(block, content, tokens, outcome) {
    const md = h("div", { class: "markdown answer", dataset: { tokens: String(tokens) } }, renderMarkdown(content, { onLink: this.ctx.onLink }));
    const copy = h("button", { type: "button", class: "ghost small copy", "aria-label": t("copy") }, t("copy"));
    copy.addEventListener("click", () => copyText(content, copy));
    // a turn that did not answer says which way: no records matched, a form not granted, words not understood
    const refused = REFUSED.includes(outcome);
    const badge = refused ? h("span", { class: `outcome-badge outcome-${outcome}` }, t(`outcome_${outcome}`)) : null;
    const wrap = h("div", { class: refused ? `answer-wrap refused outcome-${outcome}` : "answer-wrap", dataset: { outcome: outcome || "" } },
      ...(badge ? [badge] : []), md, h("div", { class: "answer-actions" }, copy));
    if (block.stream) block.stream.el.replaceWith(wrap);
    else block.flow.append(wrap);
    block.stream = null;
  }
}

const REFUSED = ["no_rows", "not_granted", "not_understood"];

const HANDLERS = {
  SESSION_STARTED(data) {
    if (data.query) this.userBubble(data.query);
    else if (data.replayOf) this.userBubble(`${t("workflow")} ${data.replayOf}`);
  },
  USER_MESSAGE(data) {
    this.closeCards();
    this.userBubble(data.content || "");
    this.loginPending = false;
  },
  TURN_STARTED(data, event, live) {
    this.current(event);
    this.lastError = null;
    this.setStatus("RUNNING", live);
  },
  SKILLS_SELECTED(data, event) {
    const names = data.selectedSkillIds || [];
    if (!names.length) return;
    const block = this.current(event);
    const old = block.head.querySelector(".skills");
    const el = h("div", { class: "skills" });
    el.textContent = t("skills", { names: names.join(", ") });
    if (old) old.replaceWith(el);
    else block.head.prepend(el);
  },
  TOKEN(data, event) {
    const block = this.current(event);
    if (!block.stream) {
      const el = h("div", { class: "stream streaming" });
      block.flow.append(el);
      block.stream = { el, text: "", tokens: 0 };
      this.thinking.hidden = true;
    }
    block.stream.text += data.delta || "";
    block.stream.tokens += 1;
    block.stream.el.textContent = block.stream.text;
  },
  ASSISTANT_MESSAGE(data, event, live) {
    const block = this.current(event);
    const tokens = block.stream ? block.stream.tokens : 0;
    this.answer(block, data.content || "", tokens, data.outcome);
    if (live) announce(t("answerDone"));
  },
  MODEL_DECISION(data, event) {
    if (data.reasoning) this.thought(this.current(event), data.reasoning);
  },
  TOOL_CALL_REQUESTED(data, event) {
    this.endStream(this.current(event), true);
    const row = this.row(data, event);
    this.setRow(row, "requested", t("toolRequested"));
    if (data.arguments !== undefined) {
      let args = data.arguments;
      try {
        args = JSON.parse(data.arguments);
      } catch {
        /* shown as sent */
      }
      this.detail(row, t("arguments"), args);
    }
  },
  TOOL_EXECUTION_STARTED(data, event) {
    const row = this.row(data, event);
    row.started = event.ts;
    this.setRow(row, "running", t("toolRunning"));
  },
  WAITING_ASYNC_CALLBACK(data, event) {
    if (!data.toolCallId) return;
    this.setRow(this.row(data, event), "waiting", t("toolWaiting"));
  },
  TOOL_CALLBACK_RECEIVED() {},
  TOOL_EXECUTION_FINISHED(data, event) {
    const row = this.row(data, event);
    this.setRow(row, "done", t("toolDone"));
    duration(row, data, event);
    if (data.summary !== undefined) this.detail(row, t("result"), data.summary);
  },
  TOOL_EXECUTION_FAILED(data, event) {
    const row = this.row(data, event);
    this.setRow(row, data.cancelled ? "cancelled" : "failed", data.cancelled ? t("toolCancelled") : t("toolFailed"));
    duration(row, data, event);
    if (data.error) this.detail(row, t("error"), toolError(data), "error");
  },
  QUESTION(data, event, live) {
    this.interaction(data, event, questionCard, live);
  },
  FORM_COLLECT(data, event, live) {
    this.interaction(data, event, formCard, live);
  },
  WRITE_PROPOSAL(data, event, live) {
    this.interaction(data, event, proposalCard, live);
  },
  INTERACTION_ANSWERED(data, event, live) {
    this.setStatus("RUNNING", live);
    const card = this.cards.get(data.interactionId);
    if (card) card.answered(data.result || {});
    const row = this.rows.get(data.toolCallId);
    if (row && row.status !== "failed") this.setRow(row, "done", t("toolDone"));
  },
  OP_RESULT(data, event) {
    const view = this.ops.get(data.opId);
    if (view) {
      view.update(data);
      return;
    }
    if (data.edited) return; // an edit of a proposal this page does not show: nothing to re-render
    const op = opCard(data, this.ctx);
    this.ops.set(data.opId, op);
    this.current(event).flow.append(op.el);
  },
  LINK(data, event) {
    if (data.opId && this.ops.has(data.opId)) return; // the op's card already carries its link
    const el = linkCard(data, this.ctx);
    if (el) this.current(event).flow.append(el);
  },
  DSL_COMPILED(data, event) {
    this.current(event).flow.append(workflowPanel(data.dslId, this.ctx));
  },
  LOGIN_EXPIRED(data, event, live) {
    const block = this.current(event);
    const resend = h("button", { type: "button", class: "ghost small" }, t("resend"));
    const text = h("span");
    text.textContent = (data.payload && data.payload.message) || t("loginExpiredEvent");
    const last = this.lastUser;
    resend.addEventListener("click", () => this.ctx.resend(last));
    block.flow.append(h("div", { class: "note warn login-note" }, text, " ", resend));
    this.loginPending = event.ts;
    if (live) this.ctx.onLoginExpired(true, event.ts);
  },
  ERROR(data, event) {
    this.current(event).errors += 1;
    this.note(event, codedOr(data, data.message || "error"), data.recovered ? "note" : "note error");
  },
  TURN_FINISHED(data, event, live) {
    const block = this.current(event);
    this.endStream(block, true);
    if (data.status === "CANCELLED") this.note(event, t("stopped"), "note warn");
    else if (data.status === "FAILED" && !block.errors && data.reason) this.note(event, t("failed", { reason: codedOr(data, data.reason) }), "note error");
    block.el.dataset.status = data.status || "";
    if (data.status !== "WAITING_USER_INPUT" && data.status !== "WAITING_CONFIRMATION") this.closeCards();
    if (data.status === "FAILED" || data.status === "CANCELLED") this.interruptRows();
    if (data.status === "FAILED") this.lastError = codedOr(data, data.reason) || this.lastError;
    this.setStatus(data.status, live);
    if (live && data.status === "CANCELLED") announce(t("stopped"));
  },
};

Conversation.prototype.interaction = function interaction(data, event, make, live) {
  const block = this.current(event);
  this.endStream(block, true);
  const card = make(data, this.ctx, this);
  this.cards.set(data.interactionId, card);
  if (card.opId) this.ops.set(card.opId, card);
  if (card.opId && data.toolCallId) this.opRows.set(card.opId, data.toolCallId);
  block.flow.append(card.el);
  const row = this.rows.get(data.toolCallId);
  if (row) this.setRow(row, "waiting", t(`status_${data.kind === "proposal" ? "WAITING_CONFIRMATION" : "WAITING_USER_INPUT"}`));
  if (live) announce(card.el.querySelector(".card-title")?.textContent || "");
};

function duration(row, data, event) {
  const ms = data.durationMs ?? (row.started ? Math.round((event.ts - row.started) * 1000) : null);
  if (ms !== null && ms !== undefined) row.time.textContent = t("duration", { ms: Math.round(ms) });
}

async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = t("copied");
  } catch {
    const area = h("textarea", { class: "sr-only" });
    area.value = text;
    document.body.append(area);
    area.select();
    const ok = document.execCommand("copy");
    area.remove();
    button.textContent = ok ? t("copied") : t("copyFailed");
  }
  window.setTimeout(() => { button.textContent = t("copy"); }, 1500);
}
