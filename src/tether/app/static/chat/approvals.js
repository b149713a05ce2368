// 待我审批: the approval requests the signed-in user may decide (GET /api/approvals?status=pending,
// docs/approvals.md), each with why it needs approval in words (``approval.reasons``: the rule's
// conditions with the op's values; the rule's name only as a tooltip), its requester, its diff
// with numbers grouped as the proposal card shows amounts, a link to the item's own address
// (``approval.url``, /chat?approval=<opId>: the page opens with that item in view; the approver may
// not open the requester's conversation), and 批准 / 驳回 buttons — and 修改
// where the policy lets its approvers edit it (``approval.approversMayEdit``): the proposal card's
// edit form on the values the item carries. A saved edit sends the op back to its requester as a
// draft, so it leaves this list with a notice. Hidden when the server has no approval policy (404)
// or nothing waits (and no notice is showing).

import { api } from "./api.js";
import { h, clear, announce } from "./dom.js";
import { t, lang } from "./i18n.js";
import { formatNumber } from "./refbox.js";
import { editForm } from "./editform.js";
import { failure } from "./problems.js";

const REFRESH_MS = 15000;
let timer = null;
let editing = null; // the item whose edit form is open: the list is not rebuilt under it
let notice = { text: "", at: 0 }; // what the last edit did, shown until a refresh after a while

const editCtx = { patch: (path, body) => api(path, { method: "PATCH", body }) };

const shown = (v) => formatNumber(v, 2) ?? v; // 92000 → 92,000, as the card's amount

function change(f) {
  const before = f.before === null || f.before === undefined ? "" : `${shown(f.before)} → `;
  const mark = f.tainted ? ` ${t("tainted", { from: f.tainted })}` : ""; // copied from text read, not typed
  return `${f.label || f.field}: ${before}${shown(f.after) ?? "—"}${mark}`;
}

function why(approval) { // each condition that holds, in the page's language; the rules as a tooltip
  const words = (approval.reasons || []).map((r) => (lang() === "en" ? r.textEn : r.text) || r.text);
  const rules = (approval.rules || []).join(", ");
  const text = words.length ? words.join(lang() === "en" ? "; " : "；") : rules;
  return h("p", { class: "approval-why", title: t("approvalRules", { rules }) }, t("approvalWhy", { why: text }));
}

const editable = (op) => Boolean((op.approval || {}).approversMayEdit && op.values && (op.op === "create" || op.op === "update"));

function item(op, reload) {
  const li = h("li", { class: "approval", dataset: { op: op.opId } });
  const approval = op.approval || {};
  const link = approval.url ? h("a", { class: "approval-link", href: approval.url, title: t("approvalLinkTitle") }, t("approvalLink")) : "";
  li.append(
    h("strong", {}, op.summary || op.formName || op.formId),
    h("span", { class: "approval-meta" }, t("requestedBy", { who: op.requester }), " ", link),
    why(approval),
  );
  const diff = h("ul", { class: "approval-diff" });
  for (const f of op.diff || []) diff.append(h("li", {}, change(f)));
  for (const line of op.lines || []) {
    const listed = line.listPrice !== undefined ? ` (${t("listPrice")} ${shown(line.listPrice)})` : "";
    diff.append(h("li", {}, `#${line.lineNo} ${(line.fields || []).map(change).join("; ")}${listed}`));
  }
  li.append(diff);
  const approve = h("button", { type: "button", class: "primary small" }, t("approveOp"));
  const reject = h("button", { type: "button", class: "ghost small" }, t("rejectOp"));
  const edit = editable(op) ? h("button", { type: "button", class: "ghost small", "aria-expanded": "false" }, t("editOp")) : null;
  const result = h("span", { class: "approval-result", role: "status" });
  const buttons = (disabled) => [approve, reject, edit].forEach((b) => { if (b) b.disabled = disabled; });
  const act = async (path, body) => {
    buttons(true);
    try {
      const answer = await api(`/api/approvals/${encodeURIComponent(op.opId)}/${path}`, { method: "POST", body });
      result.textContent = answer.text || answer.state;
      announce(result.textContent);
      setTimeout(reload, 1500);
    } catch (err) {
      result.textContent = failure(err);
      buttons(false);
    }
  };
  approve.addEventListener("click", () => act("approve"));
  reject.addEventListener("click", () => {
    const comment = window.prompt(t("rejectWhy"));
    if (comment !== null) act("reject", { comment });
  });
  const actions = h("div", { class: "approval-actions" }, approve, edit, reject, result);
  if (edit) {
    const close = () => {
      if (!editing) return;
      editing.form.remove();
      editing = null;
      diff.hidden = false;
      edit.setAttribute("aria-expanded", "false");
      buttons(false);
      edit.focus();
    };
    const saved = () => { // the op is its requester's draft again: it leaves this list
      editing = null;
      notice = { text: t("approvalEdited", { who: op.requester, what: op.summary || op.formName || op.formId }), at: Date.now() };
      announce(notice.text);
      reload();
    };
    edit.addEventListener("click", () => {
      if (editing) return;
      const p = { opId: op.opId, op: op.op, values: op.values, diff: op.diff, lines: op.lines };
      editing = editForm(p, editCtx, saved, close);
      diff.hidden = true;
      edit.setAttribute("aria-expanded", "true");
      buttons(true);
      actions.before(editing.form);
      editing.focus();
    });
  }
  li.append(actions);
  return li;
}

let wanted = null; // /chat?approval=<opId>: the item to bring into view once listed

export function showApproval(opId) {
  wanted = opId;
}

function bringIntoView(ul) {
  if (!wanted) return;
  const li = [...ul.children].find((el) => el.dataset.op === wanted);
  if (li) {
    li.classList.add("focused"); // marked and scrolled to; the composer keeps the focus
    li.scrollIntoView({ block: "nearest" });
  } else notice = { text: t("approvalNotListed"), at: Date.now() }; // decided, withdrawn, or not theirs
  wanted = null;
}

export async function loadApprovals() {
  const section = document.getElementById("approvals");
  if (!section) return;
  clearTimeout(timer);
  timer = setTimeout(loadApprovals, REFRESH_MS);
  if (editing && editing.form.isConnected) return; // not under an open edit form: the next refresh
  editing = null;
  let items = [];
  try {
    items = (await api("/api/approvals?status=pending", { quiet401: true })).items || [];
  } catch {
    items = []; // no approval policy on this server, or not signed in
  }
  if (notice.text && Date.now() - notice.at > REFRESH_MS) notice = { text: "", at: 0 };
  const ul = clear(document.getElementById("approval-list"));
  for (const op of items) ul.append(item(op, loadApprovals));
  bringIntoView(ul);
  const said = document.getElementById("approval-notice");
  if (said) said.textContent = notice.text;
  section.hidden = items.length === 0 && !notice.text;
}
