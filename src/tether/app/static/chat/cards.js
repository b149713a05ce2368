// Cards for what a turn hands to a person, to the event contract of the governed-writes issue:
// QUESTION (option chips + free text), FORM_COLLECT (a form from the ERP field metadata, 422
// problems shown per field), WRITE_PROPOSAL (before -> after, confirm / cancel through /api/ops),
// OP_RESULT (processing / pending / done / failed + retry), LINK, and the compiled workflow panel.

import { h, clear, uid, safeUrl, announce, icon } from "./dom.js";
import { formatTime, t } from "./i18n.js";
import { formatNumber, refBox } from "./refbox.js";
import { problemText, failure } from "./problems.js";
import { editForm } from "./editform.js";

// What the page itself can tell before sending (the server checks again and stays the authority):
// a number outside its field's bounds — ``positive`` (> 0), ``min`` (inclusive), ``max`` (exclusive, in magnitude).
function boundProblem(field, value) {
  if (typeof value !== "number" || !Number.isFinite(value)) return null;
  if (field.positive && value <= 0) return "min";
  if (typeof field.min === "number" && value < field.min) return "min";
  if (typeof field.max === "number" && Math.abs(value) >= field.max) return "max";
  return null;
}

function cardShell(kind, title, interactionId) {
  const id = uid(kind);
  const heading = h("h3", { id, class: "card-title" }, title);
  const el = h("section", { class: `card ${kind}`, "aria-labelledby": id, dataset: { interaction: interactionId || "" } }, heading);
  return { el, heading };
}

// ---- QUESTION -------------------------------------------------------------------------------------

export function questionCard(data, ctx) {
  const payload = data.payload || {};
  const { el } = cardShell("question", t("question"), data.interactionId);
  const text = h("p", { class: "question-text" });
  text.textContent = payload.question || "";
  el.append(text);
  const controls = [];
  const error = h("p", { class: "field-error", role: "alert" });
  const status = h("p", { class: "card-status" });
  const options = Array.isArray(payload.options) ? payload.options : [];
  if (options.length) {
    const group = h("div", { class: "chips", role: "group", "aria-label": payload.question || t("question") });
    for (const option of options) {
      const chip = h("button", { type: "button", class: "chip" });
      chip.textContent = String(option);
      chip.addEventListener("click", () => submit(String(option)));
      controls.push(chip);
      group.append(chip);
    }
    el.append(group);
  }
  if (payload.allowFreeText !== false || !options.length) {
    const inputId = uid("free");
    const input = h("input", { id: inputId, type: "text", autocomplete: "off" });
    const send = h("button", { type: "submit", class: "primary small" }, t("submit"));
    const form = h("form", { class: "free-text", novalidate: true },
      h("label", { for: inputId, class: "sr-only" }, t("freeText")), input, send);
    input.placeholder = t("freeText");
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      submit(input.value);
    });
    controls.push(input, send);
    el.append(form);
  }
  el.append(error, status);
  const setDisabled = (value) => controls.forEach((c) => { c.disabled = value; });

  async function submit(answer) {
    error.textContent = "";
    setDisabled(true);
    try {
      await ctx.post(`/api/agent/sessions/${encodeURIComponent(ctx.sessionId)}/interactions/${encodeURIComponent(data.interactionId)}`, { answer });
    } catch (err) {
      const problems = (err.body && err.body.problems) || [];
      error.textContent = problems.length ? problems.map(problemText).join("; ") : failure(err);
      if (err.status !== 409) setDisabled(false);
    }
  }

  return {
    el,
    answered(result) {
      setDisabled(true);
      el.classList.add("done");
      const answer = result.answer ?? JSON.stringify(result.values ?? result);
      status.textContent = t("answered", { answer });
    },
    close() {
      setDisabled(true);
      el.classList.add("done");
    },
  };
}

// ---- FORM_COLLECT ---------------------------------------------------------------------------------

function control(field, value, name) {
  const type = field.type || "text";
  const attrs = { name, "aria-required": field.required ? "true" : null, readonly: field.readOnly ? true : null };
  let input;
  if (type === "textarea") {
    input = h("textarea", { ...attrs, rows: "3", maxlength: field.maxLength || null });
  } else if (type === "select") {
    input = h("select", { ...attrs, disabled: field.readOnly || null });
    input.append(h("option", { value: "" }, t("choose")));
    for (const option of field.options || []) {
      const o = h("option", { value: String(option.value) });
      o.textContent = option.label ?? String(option.value);
      input.append(o);
    }
  } else if (type === "bool") {
    input = h("input", { ...attrs, type: "checkbox", disabled: field.readOnly || null });
  } else {
    const html = { number: "number", integer: "number", date: "date" }[type] || "text";
    const numeric = type === "integer" || type === "number";
    // the lowest value the browser offers: positive (> 0) has no inclusive bound, 0 is the nearest
    const low = !numeric ? null : field.positive ? Math.max(0, typeof field.min === "number" ? field.min : 0)
      : typeof field.min === "number" ? field.min : null;
    input = h("input", {
      ...attrs,
      type: html,
      min: low === null ? null : String(low),
      step: type === "integer" ? "1" : type === "number" ? "any" : null,
      inputmode: type === "integer" ? "numeric" : type === "number" ? "decimal" : null,
      maxlength: field.maxLength || null,
      autocomplete: "off",
    });
  }
  if (value !== undefined && value !== null) {
    if (type === "bool") input.checked = Boolean(value);
    else input.value = String(value);
  }
  return input;
}

function readValue(field, input) {
  const type = field.type || "text";
  if (type === "bool") return input.checked;
  const raw = input.value;
  if (raw === "") return undefined;
  if (type === "number" || type === "integer") {
    const n = Number(raw);
    return Number.isFinite(n) ? n : raw;
  }
  return raw;
}

// A ``ref`` field's value in a draft or a prefill: text, or {text, chosen} once a record was chosen.
const isChoice = (v) => v && typeof v === "object" && !Array.isArray(v) && v.chosen && typeof v.chosen === "object";

// ``refs``: for a ``ref`` field, {search(column, text, limit), chosen, onChoose} (the search box's wiring).
function fieldBlock(field, value, name, refs = null) {
  const id = uid("f");
  const errId = `${id}-err`;
  let box = null;
  let input;
  if (field.type === "ref" && refs) {
    box = refBox({
      name,
      search: (text, limit) => refs.search(field.column, text, limit),
      chosen: isChoice(value) ? value.chosen : refs.chosen || null,
      text: isChoice(value) ? value.text : value ?? "",
      onChoose: (c) => refs.onChoose?.(c),
    });
    input = box.input;
  } else input = control(field, value, name);
  input.id = id;
  if (box) box.note.id = `${id}-note`;
  input.setAttribute("aria-describedby", box ? `${errId} ${box.note.id}` : errId);
  const label = h("label", { for: id }, field.label || field.column);
  if (field.required) label.append(h("span", { class: "req", "aria-hidden": "true" }, " *"), h("span", { class: "sr-only" }, ` (${t("required")})`));
  const err = h("p", { class: "field-error", id: errId });
  const wrap = h("div", { class: `field type-${field.type || "text"}`, dataset: { field: name } },
    label, box ? box.wrap : input, box ? box.note : null, err);
  return { wrap, input, err, field, box };
}

// What a person sends and what a draft keeps, for any control (a search box has its own).
const valueOf = (c) => (c.box ? c.box.value() : readValue(c.field, c.input));

// The ERP's default as the card shows it: "today" for a date is the person's today.
function defaultOf(field) {
  if (field.type === "date" && field.default === "today") {
    const d = new Date();
    return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}-${String(d.getDate()).padStart(2, "0")}`;
  }
  return field.default;
}

// What a person typed into a form card not answered yet, kept in this tab (sessionStorage) per
// conversation and interaction, so that a reload does not lose it; gone once the form is answered.
const DRAFT_PREFIX = "tether.form.";

function readDraft(key) {
  try {
    const draft = JSON.parse(sessionStorage.getItem(key) || "null");
    return draft && typeof draft === "object" && !Array.isArray(draft) ? draft : null;
  } catch {
    return null;
  }
}

const rawValue = (c) => (c.box ? c.box.draft() : c.input.type === "checkbox" ? c.input.checked : c.input.value);

// A line's figures as they are typed (display only: the ERP computes the stored amount): the
// chosen material's list price as the 单价 placeholder, and qty × (the price typed, or that list price).
function lineFigures(line, amount) {
  const price = line.get("unit_price");
  const listPrice = [...line.values()].map((c) => c.box && c.box.chosen && c.box.chosen.price).find((p) => typeof p === "number");
  if (price) price.input.placeholder = typeof listPrice === "number" ? formatNumber(listPrice, 2) : "";
  if (!amount) return;
  const qty = line.get("qty") ? readValue(line.get("qty").field, line.get("qty").input) : undefined;
  const typed = price ? readValue(price.field, price.input) : undefined;
  const unit = typeof typed === "number" ? typed : listPrice;
  const value = typeof qty === "number" && typeof unit === "number" ? Math.round(qty * unit * 100) / 100 : null;
  amount.textContent = value === null ? "—" : formatNumber(value, 2);
  amount.dataset.amount = value === null ? "" : String(value);
}

export function formCard(data, ctx) {
  const payload = data.payload || {};
  const { el } = cardShell("form-card", payload.formName || t("form"), data.interactionId);
  const prefill = payload.prefill || {};
  const choices = payload.choices || {}; // the records the prefilled references name (server-resolved)
  const search = async (column, text, limit) => {
    const q = new URLSearchParams({ q: text, limit: String(limit) });
    const found = await ctx.get(`/api/erp/forms/${encodeURIComponent(payload.formId)}/refs/${encodeURIComponent(column)}?${q}`);
    return Array.isArray(found && found.results) ? found.results : [];
  };
  const draftKey = `${DRAFT_PREFIX}${ctx.sessionId}.${data.interactionId}`;
  const draft = readDraft(draftKey);
  const typed = (draft && draft.fields && typeof draft.fields === "object") ? draft.fields : {};
  let open = true; // not answered yet: what is typed is kept
  const form = h("form", { class: "erp-form", novalidate: true });
  const controls = new Map();
  const grid = h("div", { class: "fields" });
  for (const field of payload.fields || []) {
    if (!field.column) continue;
    const kept = !field.readOnly && Object.hasOwn(typed, field.column);
    const value = kept ? typed[field.column] : prefill[field.column] ?? defaultOf(field);
    const block = fieldBlock(field, value, field.column, { search, chosen: kept ? null : choices[field.column] });
    controls.set(field.column, block);
    grid.append(block.wrap);
  }
  form.append(grid);
  const detail = payload.detail || null;
  const detailFields = (detail && detail.fields) || null;
  const lines = [];
  let linesBody = null;
  const linesError = h("p", { class: "field-error lines-error", id: uid("lines-err") });
  const addLine = (values = {}, chosen = {}) => {
    const n = lines.length;
    const tr = h("tr", { dataset: { line: String(n) } }, h("th", { scope: "row" }, String(n + 1)));
    const line = new Map();
    const amount = detail.amount ? h("output", { class: "line-amount", "aria-label": `${detail.amount.label} (${t("lineNo")} ${n + 1})` }) : null;
    const refresh = () => lineFigures(line, amount);
    for (const field of detailFields) {
      const name = `details.${n}.${field.column}`;
      const block = fieldBlock(field, values[field.column] ?? defaultOf(field), name, { search, chosen: chosen[field.column], onChoose: refresh });
      block.wrap.querySelector("label").classList.add("sr-only");
      block.wrap.querySelector("label").append(` (${t("lineNo")} ${n + 1})`);
      line.set(field.column, block);
      tr.append(h("td", {}, block.wrap));
    }
    if (amount) tr.append(h("td", { class: "amount-cell" }, amount));
    tr.addEventListener("input", refresh);
    refresh();
    const remove = h("button", { type: "button", class: "ghost small", "aria-label": `${t("removeLine")} ${n + 1}` }, "×");
    remove.addEventListener("click", () => {
      tr.remove();
      lines[n] = null;
      keep();
    });
    tr.append(h("td", {}, remove));
    lines.push(line);
    linesBody.append(tr);
  };
  if (detailFields) {
    linesBody = h("tbody");
    const head = h("tr", {}, h("th", { scope: "col" }, "#"), detailFields.map((f) => {
      const th = h("th", { scope: "col" }, f.label || f.column);
      if (f.required) th.append(h("span", { class: "req", "aria-hidden": "true" }, " *"));
      return th;
    }), detail.amount ? h("th", { scope: "col", class: "amount-cell" }, detail.amount.label) : null,
    h("th", { scope: "col" }, h("span", { class: "sr-only" }, t("removeLine"))));
    const add = h("button", { type: "button", class: "ghost small", "aria-describedby": linesError.id }, `+ ${t("addLine")}`);
    add.addEventListener("click", () => {
      addLine();
      keep();
    });
    form.append(h("fieldset", { class: "lines" }, h("legend", {}, t("lines")),
      h("div", { class: "table-wrap" }, h("table", {}, h("thead", {}, head), linesBody)), add, linesError));
    const keptLines = draft && Array.isArray(draft.lines) ? draft.lines.filter((l) => l && typeof l === "object") : null;
    const initial = keptLines || (Array.isArray(prefill.details) && prefill.details.length ? prefill.details : [{}]);
    const chosenOf = (n) => Object.fromEntries(detailFields.map((f) => [f.column, keptLines ? null : choices[`details.${n}.${f.column}`]]));
    initial.forEach((values, n) => addLine(values, chosenOf(n)));
  }
  const general = h("p", { class: "field-error", role: "alert" });
  const submitButton = h("button", { type: "submit", class: "primary" }, t("submit"));
  const status = h("p", { class: "card-status" });
  form.append(general, h("div", { class: "card-actions" }, submitButton), status);
  el.append(form);

  const all = () => [...controls.values(), ...lines.filter(Boolean).flatMap((l) => [...l.values()])];
  const setDisabled = (value) => {
    submitButton.disabled = value;
    for (const c of all()) c.input.disabled = value || (c.field.readOnly && c.input.tagName !== "INPUT") || (c.field.readOnly && c.input.type === "checkbox");
    for (const o of form.querySelectorAll("output.line-amount")) o.classList.toggle("done", value);
    for (const b of form.querySelectorAll("button")) b.disabled = value;
  };
  const clearProblems = () => {
    general.textContent = "";
    linesError.textContent = "";
    linesError.parentElement?.classList.remove("invalid");
    for (const c of all()) {
      c.err.textContent = "";
      c.input.removeAttribute("aria-invalid");
      c.wrap.classList.remove("invalid");
    }
  };
  const collect = () => {
    const values = {};
    for (const [column, c] of controls) {
      if (c.field.readOnly) continue;
      const v = valueOf(c);
      if (v !== undefined) values[column] = v;
    }
    if (detailFields) {
      values.details = lines.filter(Boolean).map((line) => {
        const out = {};
        for (const [column, c] of line) {
          if (c.field.readOnly) continue;
          const v = valueOf(c);
          if (v !== undefined) out[column] = v;
        }
        return out;
      });
    }
    return values;
  };
  const show = (problems) => {
    let first = null;
    const rest = [];
    for (const p of problems) {
      const target = findControl(p.field);
      if (target) {
        target.err.textContent = problemText(p, target.field);
        target.input.setAttribute("aria-invalid", "true");
        target.wrap.classList.add("invalid");
        first = first || target.input;
      } else if (p.field === "details" && linesBody) { // the lines as a whole: too many, none
        linesError.textContent = [linesError.textContent, problemText(p, null, detail)].filter(Boolean).join(" ");
        linesError.parentElement.classList.add("invalid");
        first = first || linesError.parentElement.querySelector("input:not([readonly]), button");
      } else rest.push(problemText(p));
    }
    general.textContent = [t("formProblems", { n: problems.length }), ...rest].join(" ");
    first?.focus();
  };
  const findControl = (name) => {
    if (controls.has(name)) return controls.get(name);
    const m = /^details\.(\d+)\.(.+)$/.exec(name || "");
    if (!m) return null;
    const live = lines.filter(Boolean);
    return (live[Number(m[1])] && live[Number(m[1])].get(m[2])) || null;
  };

  // in this tab until the form is answered (sessionStorage: a full storage only loses the draft)
  const keep = () => {
    if (!open) return;
    const fields = {};
    for (const [column, c] of controls) if (!c.field.readOnly) fields[column] = rawValue(c);
    const kept = lines.filter(Boolean).map((line) => Object.fromEntries([...line].map(([column, c]) => [column, rawValue(c)])));
    try {
      sessionStorage.setItem(draftKey, JSON.stringify({ fields, lines: detailFields ? kept : null }));
    } catch {
      /* no room: the values stay on the page */
    }
  };
  const forget = () => {
    open = false;
    sessionStorage.removeItem(draftKey);
  };
  form.addEventListener("input", keep);
  form.addEventListener("change", keep);

  // the bounds the page can check itself, before anything is sent
  const localProblems = () => {
    const problems = [];
    const check = (c, name) => {
      if (c.field.readOnly || (c.field.type !== "number" && c.field.type !== "integer")) return;
      const code = boundProblem(c.field, readValue(c.field, c.input));
      if (code) problems.push({ field: name, code });
    };
    for (const [column, c] of controls) check(c, column);
    lines.filter(Boolean).forEach((line, n) => line.forEach((c, column) => check(c, `details.${n}.${column}`)));
    const count = lines.filter(Boolean).length;
    if (detail && Number.isInteger(detail.maxLines) && count > detail.maxLines) problems.push({ field: "details", code: "max_lines" });
    return problems;
  };

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    clearProblems();
    const local = localProblems();
    if (local.length) {
      show(local);
      return;
    }
    setDisabled(true);
    try {
      await ctx.post(`/api/agent/sessions/${encodeURIComponent(ctx.sessionId)}/interactions/${encodeURIComponent(data.interactionId)}`, { values: collect() });
      forget();
      status.textContent = t("formSubmitted");
    } catch (err) {
      setDisabled(false);
      const problems = (err.body && err.body.problems) || [];
      if (err.status === 422 && problems.length) show(problems);
      else general.textContent = failure(err);
      if (err.status === 409) setDisabled(true);
    }
  });

  return {
    el,
    answered() {
      forget();
      setDisabled(true);
      el.classList.add("done");
      status.textContent = t("formSubmitted");
    },
    close() {
      forget();
      setDisabled(true);
      el.classList.add("done");
    },
  };
}

// ---- op status (WRITE_PROPOSAL, OP_RESULT) --------------------------------------------------------

const STATE_OF = { awaiting: "awaiting_approval", confirmed: "processing", executing: "processing", executed: "done", failed: "failed", cancelled: "cancelled", expired: "expired", rejected: "rejected" };

function opState(data) {
  return data.state || STATE_OF[data.status] || null;
}

function opLink(href, label, ctx, cls = "") {
  const url = safeUrl(href);
  if (!url) return null;
  const a = h("a", { href: url.href, target: "_blank", rel: "noopener noreferrer", class: cls });
  a.textContent = label;
  ctx.onLink?.(a, url);
  return a;
}

// A failed op that cannot succeed by confirming it again: its record changed in the business system
// since the proposal, or the proposal expired (the op's ``retryable`` is false; older events: its text).
// Only a new request (a new proposal) helps.
const DEAD_END = /propose again|stale|changed since/i;

function opStatus(opId, ctx) {
  const el = h("div", { class: "op-status", "aria-live": "polite", dataset: { op: opId } });
  const view = {
    el,
    final: false,
    state: null,
    seq: 0, // updates applied so far: a confirm's answer is stale once the stream moved the op on
    data: null,
    shown: null, // what is on the card: an identical update (a poll) does not redraw or re-announce it
    notice: null, // what the last retry answered, shown under the failed state
    update(data) {
      const state = opState(data);
      const final = state === "done" || state === "cancelled" || state === "expired" || state === "rejected";
      if (view.final && !final) return; // an executed, cancelled, expired or rejected op never goes back
      view.seq += 1;
      view.state = state;
      view.status = data.status;
      view.final = final && state !== null;
      view.data = data;
      if (state !== "failed") view.notice = null;
      view.render();
      ctx.onOpChange?.();
    },
    render() {
      const data = view.data || {};
      const state = view.state;
      const key = JSON.stringify([state, data.message, data.error, data.link, data.billNo, view.notice, data.approval?.waitingFor]);
      if (key === view.shown) return;
      view.shown = key;
      el.dataset.state = state || "";
      clear(el);
      if (!state || state === "draft") return; // not confirmed yet: the proposal's buttons are the state
      const message = data.message || data.error;
      if (state === "processing") {
        el.append(h("span", { class: "spinner", "aria-hidden": "true" }), h("strong", {}, t("opProcessing")));
      } else if (state === "pending") {
        el.append(h("span", { class: "badge pending" }, icon("clock")), h("strong", {}, t("opPending")));
        const a = opLink(data.link, t("goErp"), ctx, "button-link");
        if (a) el.append(a);
      } else if (state === "done") {
        el.append(h("span", { class: "badge ok" }, icon("check")), h("strong", {}, t("opDone")));
        if (data.billNo) el.append(h("span", { class: "bill" }, t("billNo", { no: data.billNo })));
        const a = opLink(data.link, t("view"), ctx, "button-link");
        if (a) el.append(a);
      } else if (state === "failed") {
        el.append(h("span", { class: "badge bad" }, icon("cross")), h("strong", {}, t("opFailed")));
        const deadEnd = data.retryable === false || DEAD_END.test(`${data.error || ""} ${data.message || ""} ${view.notice || ""}`);
        if (!deadEnd) el.append(retryButton());
      } else if (state === "cancelled") {
        el.append(h("strong", {}, t("opCancelled")));
      } else if (state === "expired") {
        el.append(h("strong", {}, t("opExpired")));
      } else if (state === "awaiting_approval") { // docs/approvals.md: the approvers it waits for
        el.append(h("span", { class: "badge pending" }, icon("clock")), h("strong", {}, t("opAwaiting")));
        const who = ((data.approval || {}).waitingFor || []).map((w) => `${w.count}× ${w.grant}`).join(", ");
        if (who) el.append(h("span", { class: "op-message" }, t("waitingFor", { who })));
      } else if (state === "rejected") {
        el.append(h("span", { class: "badge bad" }, icon("cross")), h("strong", {}, t("opRejected")));
      }
      if (message && message !== el.querySelector("strong")?.textContent) { // not 待处理 twice
        const m = h("span", { class: state === "failed" ? "op-message error" : "op-message" });
        m.textContent = message;
        el.append(m);
      }
      if (state === "failed" && view.notice) el.append(h("span", { class: "op-message error op-notice", role: "alert" }, view.notice));
      if (state === "failed" && !el.querySelector("button")) el.append(h("span", { class: "op-message op-hint" }, t("opAskAgain")));
      announce(el.textContent);
    },
  };

  function retryButton() {
    const retry = h("button", { type: "button", class: "small" }, t("retry"));
    retry.addEventListener("click", async () => {
      retry.disabled = true;
      try {
        const seq = view.seq;
        const answer = await ctx.post(`/api/ops/${encodeURIComponent(opId)}/confirm`, {});
        if (view.seq !== seq) return; // the stream already said what happened next
        view.update(answer);
        if (view.state === "failed") { // failed again at once: say so, or the card looks unchanged
          view.notice = t("retryFailed", { reason: answer.error || answer.message || t("opFailed") });
          view.render();
        }
      } catch (err) {
        view.notice = failure(err); // the server's reason (409: the proposal cannot be confirmed again)
        view.render();
        if (!DEAD_END.test(view.notice)) retry.disabled = false;
      }
    });
    return retry;
  }

  return view;
}

function diffTable(rows) {
  const body = h("tbody");
  for (const row of rows || []) {
    const changed = JSON.stringify(row.before) !== JSON.stringify(row.after);
    const cell = (v) => {
      const td = h("td");
      td.textContent = v === null || v === undefined || v === "" ? "—" : typeof v === "object" ? JSON.stringify(v) : String(v);
      return td;
    };
    const name = h("th", { scope: "row" });
    name.textContent = row.label || row.field;
    const after = cell(row.after);
    if (row.tainted) { // copied from text the model read (a remark, a note), not typed by the person
      const mark = h("span", { class: "tainted" });
      mark.textContent = t("tainted", { from: row.tainted });
      after.append(mark);
    }
    body.append(h("tr", { class: `${changed ? "changed" : ""}${row.tainted ? " is-tainted" : ""}` }, name, cell(row.before), after));
  }
  return h("div", { class: "table-wrap" }, h("table", { class: "diff" },
    h("thead", {}, h("tr", {}, h("th", { scope: "col" }, t("field")), h("th", { scope: "col" }, t("before")), h("th", { scope: "col" }, t("after")))),
    body));
}

export function proposalCard(data, ctx) {
  const p = { ...(data.payload || {}) };
  const opName = t(`op_${p.op}`) === `op_${p.op}` ? p.op || "" : t(`op_${p.op}`);
  const { el } = cardShell("proposal", `${t("proposal")} · ${t("proposalOp", { form: p.formName || p.formId || "", op: opName })}`, data.interactionId);
  el.dataset.op = p.opId || "";
  if (p.summary) {
    const s = h("p", { class: "summary" });
    s.textContent = p.summary;
    el.append(s);
  }
  const body = h("div", { class: "proposal-body" }); // the diff: re-rendered after an edit
  const ack = h("div", { class: "ack-box" });
  el.append(body);
  const meta = h("p", { class: "meta" });
  meta.textContent = [p.expiresAt ? t("expires", { time: formatTime(p.expiresAt) }) : "", p.auto ? t("autoExec") : ""].filter(Boolean).join(" · ");
  if (meta.textContent) el.append(meta);
  const confirm = h("button", { type: "button", class: "primary" }, t("confirm"));
  const reject = h("button", { type: "button", class: "ghost" }, t("reject"));
  const canEdit = p.values && typeof p.values === "object" && (p.op === "create" || p.op === "update");
  const edit = canEdit ? h("button", { type: "button", class: "ghost", "aria-expanded": "false" }, t("editOp")) : null;
  const error = h("p", { class: "field-error", role: "alert" });
  const status = opStatus(p.opId, ctx);
  // values marked tainted: the confirm says the person checked them (the policy may require it)
  let tainted = false;
  let locked = false;
  let editing = null; // the open edit form
  let revision = 0; // edits seen (the page's own, or one another tab made)
  const tick = h("input", { type: "checkbox", class: "ack-tainted" });
  const buttons = () => {
    confirm.disabled = locked || !!editing || (tainted && !tick.checked);
    reject.disabled = locked || !!editing;
    if (edit) edit.disabled = locked || !!editing;
  };
  tick.addEventListener("change", buttons);
  const show = () => {
    clear(body);
    if (p.edited) body.append(h("p", { class: "edited-note" }, p.editedBy ? t("opEditedBy", { who: p.editedBy }) : t("opEdited")));
    if (p.diff && p.diff.length) body.append(diffTable(p.diff));
    for (const line of p.lines || []) {
      const change = t(`change_${line.change}`) === `change_${line.change}` ? line.change : t(`change_${line.change}`);
      const heading = [`${t("lineNo")} ${line.lineNo}`, change, line.material].filter(Boolean).join(" · ");
      body.append(h("div", { class: "line-diff", dataset: { change: line.change || "" } }, h("h4", {}, heading), diffTable(line.fields)));
    }
    tainted = [...(p.diff || []), ...(p.lines || []).flatMap((l) => l.fields || [])].some((f) => f.tainted);
    clear(ack);
    tick.checked = false;
    if (tainted) ack.append(h("label", { class: "ack" }, tick, t("ackTainted")));
    buttons();
  };
  const closeEdit = () => {
    if (!editing) return;
    editing.form.remove();
    editing = null;
    body.hidden = false;
    edit.setAttribute("aria-expanded", "false");
    buttons();
    edit.focus();
  };
  if (edit) {
    edit.addEventListener("click", () => {
      const seen = revision;
      editing = editForm(p, ctx, (answer, payload) => {
        if (revision === seen) Object.assign(p, { diff: answer.diff, lines: answer.lines, values: payload, edited: true, editedBy: null });
        closeEdit();
        show();
        announce(t("opEdited"));
      }, closeEdit);
      body.hidden = true;
      edit.setAttribute("aria-expanded", "true");
      body.after(editing.form);
      buttons();
      editing.focus();
    });
  }
  el.append(ack, h("div", { class: "card-actions" }, confirm, edit, reject), error, status.el);
  show();
  const lock = () => {
    locked = true;
    if (editing) closeEdit();
    buttons();
  };
  const act = async (what) => {
    locked = true;
    buttons();
    error.textContent = "";
    try {
      const seq = status.seq;
      const answerBody = what === "confirm" && tainted && tick.checked ? { acknowledgeTainted: true } : {};
      const answer = await ctx.post(`/api/ops/${encodeURIComponent(p.opId)}/${what}`, answerBody);
      // an auto op may be executed (its OP_RESULT already shown) before this answer arrives
      if (status.seq === seq) status.update(answer);
    } catch (err) {
      error.textContent = failure(err);
      if (!err.status || err.status >= 500 || (tainted && err.status === 409 && !tick.checked)) {
        locked = false;
        buttons();
      }
    }
  };
  confirm.addEventListener("click", () => act("confirm"));
  reject.addEventListener("click", () => act("cancel"));
  return {
    el,
    opId: p.opId,
    get final() { return status.final; },
    get state() { return status.state; },
    update(op) {
      if (op.status === "draft" && locked && status.state === "awaiting_approval") {
        // an edit sent the op back to its requester (an approver's, where the policy allows it):
        // a draft again, whose confirm asks for a fresh approval
        locked = false;
        error.textContent = "";
        status.update(op);
        buttons();
      }
      if (op.edited) { // OP_RESULT of an edit (this page's or another's): the new diff, still a draft
        revision += 1;
        Object.assign(p, { diff: op.diff || [], lines: op.lines || [], edited: true, editedBy: op.editedBy || null }, op.values ? { values: op.values } : {});
        if (!editing) show();
        if (op.editedBy) announce(t("opEditedBy", { who: op.editedBy }));
        return;
      }
      if (op.status && op.status !== "draft") lock();
      status.update(op);
    },
    answered(result) {
      lock();
      if (result && (result.state || result.status)) status.update({ opId: p.opId, ...result });
    },
    close() { lock(); },
  };
}

export function opCard(data, ctx) {
  const view = opStatus(data.opId, ctx);
  const { el } = cardShell("op-card", `${t("proposal")} ${data.opId || ""}`.trim());
  el.append(view.el);
  view.update(data);
  return { el, get final() { return view.final; }, get state() { return view.state; }, update: (op) => view.update(op) };
}

export function linkCard(data, ctx) {
  const label = data.label || (data.state === "pending" ? t("goErp") : data.state === "done" ? t("view") : data.url);
  const a = opLink(data.url, label, ctx);
  if (!a) return null;
  return h("div", { class: "card link-card" }, h("span", { class: "link-icon" }, icon("link")), a);
}

// ---- the compiled workflow ------------------------------------------------------------------------

function paramLabel(name) {
  const key = `param_${name}`;
  const text = t(key);
  return text === key ? name.replace(/_/g, " ") : text;
}

const isList = (value) => Array.isArray(value) && value.every((v) => typeof v === "string" || typeof v === "number");

// One parameter as a person reads it: its label (the name in the title), a list as "a, b", an
// unset (null) one empty. ``read`` gives the value back in the parameter's own type.
function paramInput(name, value) {
  const id = uid("p");
  let input;
  if (typeof value === "boolean") {
    input = h("input", { id, type: "checkbox", checked: value });
  } else if (typeof value === "number") {
    input = h("input", { id, type: "number", step: "any", value: String(value) });
  } else if (typeof value === "string") {
    input = h("input", { id, type: "text", value });
  } else if (isList(value)) {
    input = h("input", { id, type: "text", value: value.join(", "), placeholder: t("listHint") });
  } else if (value === null || value === undefined) {
    input = h("input", { id, type: "text", value: "", placeholder: t("paramUnset") });
  } else {
    input = h("input", { id, type: "text", class: "json", value: JSON.stringify(value) });
  }
  const label = h("label", { for: id, title: name });
  label.textContent = paramLabel(name);
  const read = () => {
    if (typeof value === "boolean") return input.checked;
    if (typeof value === "number") return Number(input.value);
    if (typeof value === "string") return input.value;
    if (isList(value)) {
      const items = input.value.split(/[,，、]/).map((v) => v.trim()).filter(Boolean);
      return value.length && value.every((v) => typeof v === "number") ? items.map(Number) : items;
    }
    if (value === null || value === undefined) {
      const raw = input.value.trim();
      if (!raw) return null;
      try {
        return JSON.parse(raw);
      } catch {
        return raw;
      }
    }
    return JSON.parse(input.value);
  };
  return { wrap: h("div", { class: "field", dataset: { param: name } }, label, input), read };
}

export function workflowPanel(dslId, ctx) {
  const summary = h("summary", { title: dslId }, t("workflow"));
  const body = h("div", { class: "workflow-body" }, t("workflowLoad"));
  const details = h("details", { class: "card workflow", dataset: { dsl: dslId } }, summary, body);
  let loaded = false;
  details.addEventListener("toggle", async () => {
    if (!details.open || loaded) return;
    loaded = true;
    try {
      const dsl = await ctx.get(`/api/agent/dsl/${encodeURIComponent(dslId)}`);
      clear(body);
      const inputs = Object.entries(dsl.params || {}).map(([name, value]) => [name, value, paramInput(name, value)]);
      const set = inputs.filter(([, value]) => value !== null && value !== undefined);
      const unset = inputs.filter(([, value]) => value === null || value === undefined);
      const steps = h("ol", { class: "steps" }, (dsl.steps || []).map((s) => h("li", { title: s.stepId }, h("code", {}, s.toolId))));
      const run = h("button", { type: "button", class: "primary small" }, t("replay"));
      const results = h("div", { class: "results", "aria-live": "polite" });
      body.append(h("h4", {}, t("workflowParams")), h("div", { class: "fields" }, set.map((i) => i[2].wrap)));
      if (!set.length) body.append(h("p", { class: "meta" }, t("noParams")));
      if (unset.length) {
        body.append(h("details", { class: "more-params" }, h("summary", {}, t("unsetParams", { n: unset.length })),
          h("div", { class: "fields" }, unset.map((i) => i[2].wrap))));
      }
      body.append(h("h4", {}, t("workflowSteps")), steps, h("div", { class: "card-actions" }, run), results,
        h("p", { class: "meta dsl-id" }, t("workflowId", { id: dslId })));
      run.addEventListener("click", async () => {
        clear(results).append(t("replaying"));
        run.disabled = true;
        try {
          const overrides = {};
          for (const [name, value, input] of inputs) {
            const v = input.read();
            if (JSON.stringify(v) !== JSON.stringify(value ?? null)) overrides[name] = v;
          }
          const out = await ctx.post(`/api/agent/dsl/${encodeURIComponent(dslId)}/execute`, overrides);
          clear(results).append(replayTable(out));
        } catch (err) {
          clear(results).append(h("p", { class: "field-error" }, failure(err)));
        } finally {
          run.disabled = false;
        }
      });
    } catch (err) {
      clear(body).append(h("p", { class: "field-error" }, failure(err)));
      loaded = false;
    }
  });
  return details;
}

const statusText = (status) => (t(`status_${status}`) === `status_${status}` ? status : t(`status_${status}`));

function replayTable(out) {
  const rows = (out.steps || []).map((s, n) => {
    const pre = h("pre");
    const text = JSON.stringify(s.output);
    pre.textContent = text && text.length > 300 ? `${text.slice(0, 299)}…` : text;
    return h("tr", { dataset: { status: s.status } }, h("td", { title: s.stepId }, String(n + 1)), h("td", {}, h("code", {}, s.toolId)),
      h("td", {}, statusText(s.status)), h("td", {}, pre));
  });
  const head = h("p", { class: "replay-status", dataset: { status: out.status } }, t("replayDone", { status: statusText(out.status) }));
  if (out.error) head.append(` — ${out.error}`);
  return h("div", {}, head, h("div", { class: "table-wrap" }, h("table", {},
    h("thead", {}, h("tr", {}, [t("step"), t("tool"), t("state"), t("result")].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows))));
}
