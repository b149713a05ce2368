// 待我审批: the approval requests the signed-in user may decide (GET /api/approvals?status=pending,
// docs/approvals.md), each with its diff, requester and rule, and 批准 / 驳回 buttons. Hidden when
// the server has no approval policy (404) or nothing waits.

import { api } from "./api.js";
import { h, clear, announce } from "./dom.js";
import { t } from "./i18n.js";

const REFRESH_MS = 15000;
let timer = null;

function change(f) {
  const before = f.before === null || f.before === undefined ? "" : `${f.before} → `;
  const mark = f.tainted ? ` ${t("tainted", { from: f.tainted })}` : ""; // copied from text read, not typed
  return `${f.label || f.field}: ${before}${f.after ?? "—"}${mark}`;
}

function item(op, reload) {
  const li = h("li", { class: "approval", dataset: { op: op.opId } });
  const rules = ((op.approval || {}).rules || []).join(", ");
  li.append(
    h("strong", {}, op.summary || op.formName || op.formId),
    h("span", { class: "approval-meta" }, t("requestedBy", { who: op.requester, rules })),
  );
  const diff = h("ul", { class: "approval-diff" });
  for (const f of op.diff || []) diff.append(h("li", {}, change(f)));
  for (const line of op.lines || []) {
    const listed = line.listPrice !== undefined ? ` (${t("listPrice")} ${line.listPrice})` : "";
    diff.append(h("li", {}, `#${line.lineNo} ${(line.fields || []).map(change).join("; ")}${listed}`));
  }
  li.append(diff);
  const approve = h("button", { type: "button", class: "primary small" }, t("approveOp"));
  const reject = h("button", { type: "button", class: "ghost small" }, t("rejectOp"));
  const result = h("span", { class: "approval-result", role: "status" });
  const act = async (path, body) => {
    approve.disabled = reject.disabled = true;
    try {
      const answer = await api(`/api/approvals/${encodeURIComponent(op.opId)}/${path}`, { method: "POST", body });
      result.textContent = answer.text || answer.state;
      announce(result.textContent);
      setTimeout(reload, 1500);
    } catch (err) {
      result.textContent = err.message || String(err); // the server's sentence, or a coded one in the page's language
      approve.disabled = reject.disabled = false;
    }
  };
  approve.addEventListener("click", () => act("approve"));
  reject.addEventListener("click", () => {
    const comment = window.prompt(t("rejectWhy"));
    if (comment !== null) act("reject", { comment });
  });
  li.append(h("div", { class: "approval-actions" }, approve, reject, result));
  return li;
}

export async function loadApprovals() {
  const section = document.getElementById("approvals");
  if (!section) return;
  clearTimeout(timer);
  let items = [];
  try {
    items = (await api("/api/approvals?status=pending", { quiet401: true })).items || [];
  } catch {
    items = []; // no approval policy on this server, or not signed in
  }
  const ul = clear(document.getElementById("approval-list"));
  for (const op of items) ul.append(item(op, loadApprovals));
  section.hidden = items.length === 0;
  timer = setTimeout(loadApprovals, REFRESH_MS);
}
