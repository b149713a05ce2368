// Edit before approve (docs/approvals.md): the form that retypes an op's proposed values, shared by
// the requester's proposal card (修改) and an approver's item under 待我审批 (修改, where the policy
// lets approvers edit). It sends the payload back whole (``PATCH /api/ops/{opId}``) and shows a
// 422's problems beside their inputs; what a saved edit means is the caller's (``save``).

import { h, uid } from "./dom.js";
import { t } from "./i18n.js";
import { problemText, failure } from "./problems.js";

// A 422 problem of an edit in the page's language: the card has no field declarations (bounds),
// so a bound's problem is said without its figure.
function editProblemText(problem) {
  const plain = t(`problem_${problem.code}_plain`);
  return plain === `problem_${problem.code}_plain` ? problemText(problem) : plain;
}

// The proposed values as a person can retype them: a number or a text. A reference (an ERP id,
// shown in the diff by its code and name) is kept as it is.
const retypable = (value, row) =>
  typeof value === "number" || (typeof value === "string" && !(row && row.after !== value));

// The lines the form shows, each with its index in the payload's ``details`` (what a 422 names):
// a new bill's every line; an update's lines that the proposal adds or changes. An update's
// ``details`` are the whole bill — every line it keeps, in order, then the new ones — and each
// line of its diff says where it is in them (``detailIndex``); the lines it leaves alone are not
// shown and go back as proposed.
function editableLines(p, values) {
  const details = Array.isArray(values.details) ? values.details : [];
  const lines = p.lines || [];
  if (p.op === "create") return details.map((line, n) => ({ n, line, shown: lines.find((l) => l.lineNo === n + 1), whole: true }));
  if (p.op !== "update") return [];
  return lines
    .filter((l) => l.change !== "delete" && Number.isInteger(l.detailIndex) && details[l.detailIndex])
    .map((shown) => ({ n: shown.detailIndex, line: details[shown.detailIndex], shown, whole: shown.change === "add" }))
    .sort((a, b) => a.n - b.n);
}

// "行 2 · M0005" as the diff names the line: its number in the bill and, for an update, its material.
function lineLegend(n, shown) {
  const material = shown && (shown.material || (shown.change === "add" ? null : (shown.fields || []).find((f) => f.field === "material_id")?.after));
  return [`${t("lineNo")} ${shown ? shown.lineNo : n + 1}`, material].filter(Boolean).join(" · ");
}

// The proposal's values as inputs — the master fields and the lines ``editableLines`` shows — sent
// back whole as ``PATCH /api/ops/{opId} {payload}``. ``save`` gets (the op's new view, the payload
// sent) after the server took it; a 422 shows each problem beside its input.
export function editForm(p, ctx, save, close) {
  const values = p.values || {};
  const form = h("form", { class: "proposal-edit", novalidate: true, "aria-label": t("editValues") });
  const inputs = new Map(); // path ("remark", "details.0.qty") -> {input, err}
  const block = (path, value, row) => {
    const id = uid("e");
    const label = h("label", { for: id });
    label.textContent = (row && row.label) || path.split(".").pop();
    const err = h("p", { class: "field-error", id: `${id}-err` });
    if (!retypable(value, row)) {
      const shown = h("output", { id, class: "kept" });
      shown.textContent = row && row.after !== undefined ? String(row.after) : String(value);
      return h("div", { class: "field kept", dataset: { field: path } }, label, shown);
    }
    const numeric = typeof value === "number";
    const long = !numeric && value.length > 30;
    const input = long ? h("textarea", { id, name: path, rows: "2" })
      : h("input", { id, name: path, type: numeric ? "number" : "text", step: numeric ? "any" : null,
        inputmode: numeric ? "decimal" : null, autocomplete: "off" });
    input.value = String(value);
    input.setAttribute("aria-describedby", err.id);
    inputs.set(path, { input, err, numeric });
    return h("div", { class: `field${numeric ? " type-number" : ""}`, dataset: { field: path } }, label, input, err);
  };
  const rowOf = (rows, key) => (rows || []).find((f) => f.field === key);
  const grid = h("div", { class: "fields" });
  for (const [key, value] of Object.entries(values)) {
    if (key !== "details" && value !== null && value !== undefined) grid.append(block(key, value, rowOf(p.diff, key)));
  }
  form.append(grid);
  const shownLines = editableLines(p, values);
  const others = p.op === "update" && Array.isArray(values.details) ? values.details.length - shownLines.length : 0;
  if (others > 0) form.append(h("p", { class: "meta edit-kept" }, t("editLinesKept", { n: others })));
  for (const { n, line, shown, whole } of shownLines) {
    const set = h("fieldset", { class: "edit-line", dataset: { line: String(n) } }, h("legend", {}, lineLegend(n, shown)));
    for (const [key, value] of Object.entries(line || {})) {
      const row = rowOf(shown && shown.fields, key);
      // an update's line: the values the proposal changes (the others go back as proposed)
      if (value !== null && value !== undefined && (whole || row)) set.append(block(`details.${n}.${key}`, value, row));
    }
    form.append(set);
  }
  const error = h("p", { class: "field-error", role: "alert" });
  const submit = h("button", { type: "submit", class: "primary small" }, t("saveEdit"));
  const cancel = h("button", { type: "button", class: "ghost small" }, t("cancelEdit"));
  form.append(error, h("div", { class: "card-actions" }, submit, cancel));
  cancel.addEventListener("click", close);
  form.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      e.preventDefault();
      close();
    }
  });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const payload = JSON.parse(JSON.stringify(values));
    for (const [path, { input, err, numeric }] of inputs) {
      err.textContent = "";
      input.removeAttribute("aria-invalid");
      const raw = input.value.trim();
      const value = numeric ? (raw === "" ? null : Number(raw)) : input.value;
      const keys = path.split(".");
      let at = payload;
      for (const k of keys.slice(0, -1)) at = at[k];
      at[keys[keys.length - 1]] = value;
    }
    error.textContent = "";
    submit.disabled = true;
    try {
      const answer = await ctx.patch(`/api/ops/${encodeURIComponent(p.opId)}`, { payload });
      save(answer, payload);
    } catch (err) {
      const problems = (err && err.status === 422 && err.body && err.body.problems) || [];
      const loose = [];
      let first = null;
      for (const problem of problems) {
        const target = inputs.get(problem.field);
        if (!target) {
          loose.push(editProblemText(problem));
          continue;
        }
        target.err.textContent = editProblemText(problem);
        target.input.setAttribute("aria-invalid", "true");
        first = first || target.input;
      }
      error.textContent = problems.length ? (loose.length ? loose.join("; ") : t("formProblems", { n: problems.length })) : failure(err);
      if (first) first.focus();
      submit.disabled = false;
    }
  });
  return { form, focus: () => form.querySelector("input, textarea")?.focus() };
}
