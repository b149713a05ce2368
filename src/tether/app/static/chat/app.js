// The chat page: login, the conversation list, one open conversation (its id in the URL), the
// composer, stop, re-login. Everything talks to this server only.

import {
  api, ApiError, fetchBlob, followEvents, forgetLogin, profile, saveLogin, shownInBanner, token, unavailable,
  whenUnauthorized, whenUnavailable,
} from "./api.js";
import { h, clear, announce, icon } from "./dom.js";
import { applyStatic, formatTime, lang, setLang, t } from "./i18n.js";
import { Conversation } from "./view.js";
import { loadApprovals, showApproval } from "./approvals.js";

const $ = (id) => document.getElementById(id);
const PAGE = 30;
const MAX_PAGE = 200; // the server's largest page
const state = {
  sessionId: null,
  title: "",
  conversation: null,
  abort: null,
  status: null,
  opState: null,
  lastError: null,
  list: { offset: 0, q: "", archived: false, items: [] },
  expired: false,
  outage: false, // the ERP cannot be reached: the banner retries
};

// ---- boot -----------------------------------------------------------------------------------------

function boot() {
  applyStatic();
  $("lang-switch").textContent = t("lang");
  $("lang-switch").lang = lang() === "zh" ? "en" : "zh-CN";
  whenUnauthorized(() => expired(t("sessionExpired")));
  whenUnavailable(outage);
  wire();
  if (!token()) openLogin();
  else start();
}

function start() {
  showWho();
  loadList(true);
  const approval = new URLSearchParams(window.location.search).get("approval"); // an approval's link
  if (/^[\w-]{1,200}$/.test(approval || "")) showApproval(approval);
  loadApprovals(); // 待我审批 (docs/approvals.md)
  const id = idFromUrl();
  if (id) openConversation(id, false);
  else newChat(false);
}

function idFromUrl() {
  const params = new URLSearchParams(window.location.search);
  const id = params.get("c") || decodeURIComponent(window.location.hash.replace(/^#/, ""));
  return /^[\w-]{1,200}$/.test(id || "") ? id : null;
}

function setUrl(id, push) {
  const url = id ? `/chat?c=${encodeURIComponent(id)}` : "/chat";
  if (url === window.location.pathname + window.location.search) return;
  if (push) window.history.pushState({ id }, "", url);
  else window.history.replaceState({ id }, "", url);
}

function showWho() {
  const who = profile() || {};
  $("who").textContent = who.name ? t("signedInAs", { name: who.name }) : "";
}

// ---- wiring ---------------------------------------------------------------------------------------

function wire() {
  $("new-chat").addEventListener("click", () => {
    setMenu(false, { focus: false });
    newChat(true);
  });
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    send();
  });
  $("composer-input").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing && e.keyCode !== 229) {
      e.preventDefault();
      send();
    }
  });
  $("stop").addEventListener("click", stop);
  $("withdraw").addEventListener("click", withdraw);
  $("logout").addEventListener("click", logout);
  $("banner-login").addEventListener("click", () => openLogin());
  $("lang-switch").addEventListener("click", () => {
    setLang(lang() === "zh" ? "en" : "zh");
    applyStatic();
    $("lang-switch").textContent = t("lang");
    $("lang-switch").lang = lang() === "zh" ? "en" : "zh-CN";
    renderList();
    showWho();
    if (state.sessionId) openConversation(state.sessionId, false);
    else newChat(false);
  });
  let timer = null;
  $("search-input").addEventListener("input", () => {
    window.clearTimeout(timer);
    timer = window.setTimeout(() => {
      state.list.q = $("search-input").value.trim();
      loadList(true);
    }, 250);
  });
  $("show-archived").addEventListener("change", () => {
    state.list.archived = $("show-archived").checked;
    $("list-title").textContent = t(state.list.archived ? "archivedList" : "recent");
    loadList(true);
  });
  $("load-more").addEventListener("click", () => loadList(false));
  wireMenu();
  // a write completed in another tab (the ERP's form) shows when the user comes back to this one
  window.addEventListener("focus", () => state.conversation?.reconcileOps(true));
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") state.conversation?.reconcileOps(true);
  });
  window.addEventListener("popstate", () => {
    const id = idFromUrl();
    if (id) openConversation(id, false);
    else newChat(false);
  });
  wireLogin();
}

// ---- the sidebar as an overlay on narrow screens ----------------------------------------------------

const NARROW = window.matchMedia("(max-width: 760px)");

function menuOpen() {
  return $("menu").getAttribute("aria-expanded") === "true";
}

function setMenu(open, { focus = true } = {}) {
  if (open === menuOpen()) return;
  $("menu").setAttribute("aria-expanded", String(open));
  document.querySelector(".shell").classList.toggle("menu-open", open);
  if (open) $("new-chat").focus();
  else if (focus && NARROW.matches) $("menu").focus();
}

function wireMenu() {
  $("menu").addEventListener("click", () => setMenu(!menuOpen()));
  $("scrim").addEventListener("click", () => setMenu(false, { focus: false }));
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && menuOpen() && !$("login").open) setMenu(false);
  });
  NARROW.addEventListener("change", () => setMenu(false, { focus: false }));
}

// ---- conversations list ---------------------------------------------------------------------------

let listRequest = 0;

// ``reset``: from the top; ``again``: the conversations already shown, read again (their status and
// writeState), as many as are loaded
async function loadList(reset, { again = false } = {}) {
  if (!token()) return;
  const mine = ++listRequest; // only the latest answer is shown
  const offset = reset ? 0 : state.list.offset;
  const limit = again ? Math.min(MAX_PAGE, Math.max(PAGE, state.list.items.length)) : PAGE;
  const params = new URLSearchParams({ limit: String(limit), offset: String(offset) });
  if (state.list.q) params.set("q", state.list.q);
  if (state.list.archived) params.set("archived", "true");
  try {
    const data = await api(`/api/agent/sessions?${params}`);
    if (mine !== listRequest) return;
    const items = data.items || [];
    const before = reset ? [] : state.list.items;
    const seen = new Set(before.map((i) => i.sessionId));
    state.list.items = [...before, ...items.filter((i) => !seen.has(i.sessionId))];
    state.list.offset = offset + items.length;
    $("load-more").hidden = items.length < limit;
    renderList();
  } catch (err) {
    if (!shownInBanner(err)) toast(t("requestFailed", { reason: err.message }));
  }
}

function renderList() {
  const ul = clear($("conversations"));
  if (!state.list.items.length) {
    ul.append(h("li", { class: "empty-list" }, t(state.list.q ? "noMatches" : "noConversations")));
    return;
  }
  for (const item of state.list.items) ul.append(listItem(item));
}

// The open conversation's item says what the header says — its status, and the write the pill names —
// as soon as the header changes, and after every read of the list: the list is read again only a
// moment after a turn ends, and a summary read while the turn ran must not leave 运行中 beside 已完成.
function asHeader(item) {
  if (item.sessionId !== state.sessionId || !state.status) return item;
  const writeState = state.opState || (state.status === "WAITING_CONFIRMATION" ? item.writeState : null);
  return { ...item, status: state.status, writeState };
}

const shownAs = (item) => `${item.status}|${item.writeState || ""}`;

function showOpenItem() {
  const item = state.list.items.find((i) => i.sessionId === state.sessionId);
  const li = item && document.querySelector(`#conversations li[data-id="${CSS.escape(item.sessionId)}"]`);
  if (!li || li.querySelector("form.rename") || li.dataset.shown === shownAs(asHeader(item))) return; // not under a rename
  const focused = li.contains(document.activeElement);
  const fresh = listItem(item);
  li.replaceWith(fresh);
  if (focused) fresh.querySelector(".conv-open").focus();
}

function listItem(listed) {
  const item = asHeader(listed);
  const title = item.title || item.sessionId;
  const active = item.sessionId === state.sessionId;
  const open = h("button", { type: "button", class: "conv-open", "aria-current": active ? "page" : null },
    h("span", { class: "conv-head" }, h("span", { class: "conv-title" }, title), writeBadge(item)), convMeta(item));
  open.addEventListener("click", () => {
    setMenu(false);
    openConversation(item.sessionId, true);
  });
  const rename = h("button", { type: "button", class: "icon", "aria-label": t("renameOf", { title }), title: t("rename") }, icon("edit"));
  rename.addEventListener("click", () => startRename(li, listed));
  const archiveLabel = state.list.archived ? t("unarchiveOf", { title }) : t("archiveOf", { title });
  const archive = h("button", { type: "button", class: "icon", "aria-label": archiveLabel, title: archiveLabel }, icon(state.list.archived ? "unarchive" : "archive"));
  archive.addEventListener("click", () => setArchived(listed, !state.list.archived));
  const li = h("li", { class: active ? "conv active" : "conv", dataset: { id: item.sessionId, shown: shownAs(item) } }, open, h("div", { class: "conv-actions" }, rename, archive));
  return li;
}

// What a conversation's newest write still needs (the summary's writeState): a badge with an icon and
// its words, so that it is not told by colour alone.
const WRITE_ICON = { draft: "edit", processing: "sync", pending: "clock", awaiting_approval: "clock", failed: "cross" };

function writeState(item) {
  return Object.hasOwn(WRITE_ICON, item.writeState || "") ? item.writeState : null;
}

function writeBadge(item) {
  const write = writeState(item);
  if (!write) return null;
  return h("span", { class: "conv-write", dataset: { write } }, icon(WRITE_ICON[write]), t(`write_${write}`));
}

// status · time; where the badge says it all (a turn over, or waiting for the confirm), not 已完成
// beside a write that has not happened, nor 等待确认 twice
function convMeta(item) {
  const write = writeState(item);
  const covered = write && (item.status === "SUCCEEDED" || item.status === "WAITING_CONFIRMATION" || write === "awaiting_approval");
  const dot = covered ? `op-${write}` : `status-${item.status}`;
  const text = [covered ? null : t(`status_${item.status}`), formatTime(item.updatedAt)].filter(Boolean).join(" · ");
  return h("span", { class: "conv-meta" }, h("span", { class: `dot ${dot}`, "aria-hidden": "true" }), text);
}

function startRename(li, item) {
  const id = `rename-${item.sessionId}`;
  const input = h("input", { id, type: "text", value: item.title || "", maxlength: "200" });
  const save = h("button", { type: "submit", class: "primary small" }, t("save"));
  const cancel = h("button", { type: "button", class: "ghost small" }, t("cancel"));
  const form = h("form", { class: "rename", novalidate: true }, h("label", { for: id, class: "sr-only" }, t("renameLabel")), input, save, cancel);
  cancel.addEventListener("click", () => renderList());
  input.addEventListener("keydown", (e) => {
    if (e.key === "Escape") renderList();
  });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const title = input.value.trim();
    if (!title) return;
    try {
      const data = await api(`/api/agent/sessions/${encodeURIComponent(item.sessionId)}`, { method: "PATCH", body: { title } });
      item.title = (data && data.title) || title;
      if (item.sessionId === state.sessionId) setTitle(item.title);
      renderList();
      focusItem(item.sessionId);
    } catch (err) {
      toast(err.status === 405 || err.status === 404 ? t("notSupported", { status: err.status }) : t("requestFailed", { reason: err.message }));
    }
  });
  clear(li).append(form);
  input.focus();
  input.select();
}

async function setArchived(item, archived) {
  try {
    await api(`/api/agent/sessions/${encodeURIComponent(item.sessionId)}`, { method: "PATCH", body: { archived } });
    state.list.items = state.list.items.filter((i) => i.sessionId !== item.sessionId);
    renderList();
    $("search-input").focus();
  } catch (err) {
    toast(err.status === 405 || err.status === 404 ? t("notSupported", { status: err.status }) : t("requestFailed", { reason: err.message }));
  }
}

function focusItem(id) {
  const button = document.querySelector(`#conversations li[data-id="${CSS.escape(id)}"] .conv-open`);
  button?.focus();
}

function markActive() {
  for (const li of document.querySelectorAll("#conversations li.conv")) {
    const active = li.dataset.id === state.sessionId;
    li.classList.toggle("active", active);
    const button = li.querySelector(".conv-open");
    if (active) button.setAttribute("aria-current", "page");
    else button.removeAttribute("aria-current");
  }
}

// ---- one conversation -----------------------------------------------------------------------------

function stopFollowing() {
  if (state.abort) state.abort.abort();
  state.abort = null;
  state.conversation?.dispose();
}

function setTitle(title) {
  state.title = title;
  $("chat-title").textContent = title || t("newChat");
  document.title = title ? `${title} · tether` : "tether";
}

function newChat(push) {
  stopFollowing();
  state.sessionId = null;
  state.conversation = null;
  setUrl(null, push);
  setTitle("");
  const messages = clear($("messages"));
  const hint = tFor("emptyHint", profile()?.provider); // what this login can ask
  messages.append(h("div", { class: "empty", id: "empty" }, h("h2", {}, t("emptyTitle")), h("p", {}, hint)));
  onStatus(null, { ops: null, lastError: null });
  markActive();
  $("composer-input").focus();
}

function context(sessionId) {
  return {
    sessionId,
    post: (path, body) => api(path, { method: "POST", body }),
    patch: (path, body) => api(path, { method: "PATCH", body }),
    get: (path) => api(path),
    onStatus: (status, more) => onStatus(status, more),
    onLoginExpired: (live, ts) => {
      const at = (profile() || {}).at || 0;
      if (live || ts * 1000 > at) expired(t("loginExpiredEvent")); // not when the user logged in since
    },
    onLink: wireLink,
    resend: (text) => {
      if (text) send(text);
    },
  };
}

async function openConversation(id, push) {
  stopFollowing();
  state.sessionId = id;
  setUrl(id, push);
  markActive();
  const conversation = new Conversation($("messages"), context(id));
  state.conversation = conversation;
  let data;
  try {
    data = await api(`/api/agent/sessions/${encodeURIComponent(id)}/runtime`);
  } catch (err) {
    if (state.conversation !== conversation) return;
    if (err.status === 404) {
      setTitle("");
      clear($("messages")).append(h("div", { class: "empty" }, h("p", {}, t("notFound"))));
    } else if (!shownInBanner(err)) {
      toast(t("requestFailed", { reason: err.message }));
    }
    return;
  }
  if (state.conversation !== conversation) return; // another one was opened meanwhile
  setTitle(data.session.title);
  for (const event of data.events) conversation.handle(event, false);
  conversation.settle(data.session);
  follow(conversation, id);
  conversation.reconcileOps();
}

function follow(conversation, id) {
  const abort = new AbortController();
  state.abort = abort;
  followEvents(id, conversation.lastSeq, {
    signal: abort.signal,
    onEvent: (event) => {
      if (state.conversation !== conversation) return;
      conversation.handle(event, true);
      if (event.type === "TURN_FINISHED" || event.type === "SESSION_STARTED") refreshList();
    },
    onState: (what) => {
      if (what === "retry") announce(t("networkRetry"));
    },
    onEnd: () => {},
  });
}

// The list read again (statuses, titles, each conversation's writeState) a moment after what the
// open conversation showed moved on: a turn finished, one of its writes changed state.
let refreshTimer = null;

function refreshList() {
  window.clearTimeout(refreshTimer);
  refreshTimer = window.setTimeout(() => {
    if (document.querySelector("#conversations form.rename")) refreshList(); // not under a rename
    else loadList(true, { again: true });
  }, 300);
}

// The pill says the session's status; once a turn is over, a write still pending in the ERP (or the
// latest one failed) is what the user has to know, not 已完成.
function onStatus(status, { ops = state.opState, lastError = status === "FAILED" ? state.lastError : null } = {}) {
  const opsMoved = ops !== state.opState;
  state.status = status;
  state.opState = ops;
  state.lastError = lastError;
  if (opsMoved && state.sessionId && state.list.items.some((i) => i.sessionId === state.sessionId)) refreshList();
  showOpenItem();
  const pill = $("chat-status");
  const awaiting = ops === "awaiting_approval"; // confirmed, waiting for the approvers: not 等待确认, and no 停止
  const op = (status === "SUCCEEDED" && ops) || awaiting ? ops : null;
  pill.hidden = !status;
  pill.textContent = !status ? "" : op ? t(`pill_op_${op}`) : t(`status_${status}`);
  pill.dataset.status = status || "";
  if (op) pill.dataset.op = op;
  else delete pill.dataset.op;
  const error = $("chat-error");
  error.hidden = !(status === "FAILED" && lastError);
  error.textContent = error.hidden ? "" : lastError;
  error.title = error.textContent;
  const stoppable = status === "RUNNING" || status === "WAITING_ASYNC_CALLBACK" || status === "WAITING_CONFIRMATION" || status === "WAITING_USER_INPUT";
  $("stop").hidden = !stoppable || awaiting;
  $("withdraw").hidden = !awaiting || !status || status === "CANCELLED";
  const blocked = status === "RUNNING" || status === "WAITING_ASYNC_CALLBACK" || status === "WAITING_CONFIRMATION";
  $("send").disabled = blocked;
  $("composer-input").setAttribute("aria-busy", status === "RUNNING" ? "true" : "false");
}

async function send(text) {
  const input = $("composer-input");
  const message = (text ?? input.value).trim();
  if (!message || !token()) return;
  if (state.status === "RUNNING" || state.status === "WAITING_ASYNC_CALLBACK" || state.status === "WAITING_CONFIRMATION") return;
  $("send").disabled = true;
  try {
    if (!state.sessionId) {
      const s = await api("/api/agent/sessions?wait=false", { method: "POST", body: { message } });
      if (text === undefined) input.value = "";
      await openConversation(s.sessionId, true);
      loadList(true);
    } else {
      const id = state.sessionId;
      const seen = state.conversation?.lastSeq;
      await api(`/api/agent/sessions/${encodeURIComponent(id)}/messages?wait=false`, { method: "POST", body: { message } });
      if (text === undefined) input.value = "";
      // a quick turn's events may have come before this answer: they tell its status, not this guess
      if (state.sessionId === id && state.conversation?.lastSeq === seen) onStatus("RUNNING", { lastError: null });
    }
    announce(t("answering"));
  } catch (err) {
    if (!shownInBanner(err)) toast(t("requestFailed", { reason: err.message }));
    onStatus(state.status);
  }
}

async function stop() {
  if (!state.sessionId) return;
  $("stop").disabled = true;
  try {
    await api(`/api/agent/sessions/${encodeURIComponent(state.sessionId)}/cancel`, { method: "POST" });
  } catch (err) {
    if (err.status !== 409 && !shownInBanner(err)) toast(t("requestFailed", { reason: err.message }));
  } finally {
    $("stop").disabled = false;
    $("composer-input").focus(); // the stop button goes away with the turn
  }
}

// 撤回申请: an explicit, confirmed action — stopping a turn never withdraws a confirmed write that
// awaits approval (the server answers 409 SESSION_AWAITING_APPROVAL unless asked to withdraw).
async function withdraw() {
  if (!state.sessionId || !window.confirm(t("withdrawConfirm"))) return;
  $("withdraw").disabled = true;
  try {
    await api(`/api/agent/sessions/${encodeURIComponent(state.sessionId)}/cancel`, { method: "POST", body: { withdraw: true } });
    toast(t("withdrawn"));
  } catch (err) {
    if (!shownInBanner(err)) toast(t("requestFailed", { reason: err.message }));
  } finally {
    $("withdraw").disabled = false;
  }
}

// ---- report links: fetched with the token, opened as a blob -------------------------------------

const REPORT = /^\/api\/reports\/[\w.-]+\.html$/;

function wireLink(a, url) {
  if (url.origin !== window.location.origin || !REPORT.test(url.pathname)) return;
  a.dataset.report = url.pathname;
  a.addEventListener("click", (e) => {
    e.preventDefault();
    openReport(url.pathname, a);
  });
}

const REPORT_CSP = `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">`;

async function openReport(path, anchor) {
  const win = window.open("about:blank", "_blank");
  try {
    const html = await fetchBlob(path);
    const safe = /<head[^>]*>/i.test(html) ? html.replace(/<head[^>]*>/i, (m) => m + REPORT_CSP) : REPORT_CSP + html;
    const href = URL.createObjectURL(new Blob([safe], { type: "text/html" }));
    if (win) {
      win.opener = null;
      win.location.href = href;
    } else {
      const link = h("a", { href, target: "_blank", rel: "noopener" }, t("openReport"));
      anchor.after(h("span", { class: "note" }, t("reportBlocked"), link));
    }
  } catch (err) {
    win?.close();
    toast(t("reportFailed", { reason: err.message }));
  }
}

// ---- login ----------------------------------------------------------------------------------------

function expired(text) {
  state.expired = true;
  endOutage();
  $("banner-text").textContent = text;
  $("banner-login").hidden = false;
  $("banner").hidden = false;
}

// The ERP behind the login cannot be reached (503): the login is still good, so no login dialog —
// a banner that says so, and a retry after the server's Retry-After until the ERP answers again;
// then the list and the open conversation are read again, as they were.
let outageTimer = null;

function outage(seconds) {
  if (state.expired) return; // a login that really lapsed is the banner to show
  state.outage = true;
  $("banner-text").textContent = t("erpUnavailable");
  $("banner-login").hidden = true;
  $("banner").hidden = false;
  window.clearTimeout(outageTimer);
  outageTimer = window.setTimeout(probeErp, seconds * 1000);
}

async function probeErp() {
  if (!state.outage || !token()) return;
  try {
    await api("/api/auth/me");
  } catch (err) {
    if (!(err instanceof ApiError) || (err.status !== 401 && !unavailable(err.status, err.body))) outage(5);
    return; // a 503 re-armed the retry (outage), a 401 shows the login banner
  }
  endOutage();
  $("banner").hidden = true;
  loadList(true);
  if (state.sessionId) openConversation(state.sessionId, false);
}

function endOutage() {
  state.outage = false;
  window.clearTimeout(outageTimer);
}

// A text for one identity provider (key_provider) when the page has one, else the general text.
function tFor(key, provider) {
  const own = `${key}_${provider}`;
  return provider && t(own) !== own ? t(own) : t(key);
}

// The login methods this server offers (GET /api/auth/methods): an identity provider's
// username-and-password login (the ERP pack's), and a bearer token. The password tab is shown,
// and named, only when a provider offers one.
let passwordLogin = null; // {provider, url}
const loginMethods = api("/api/auth/methods", { bearer: null, quiet401: true })
  .then((data) => {
    passwordLogin = (data.methods || []).find((m) => m.kind === "password") || null;
  })
  .catch(() => {
    passwordLogin = null;
  })
  .then(() => {
    const tab = $("tab-password");
    tab.hidden = !passwordLogin;
    if (passwordLogin) {
      const own = `loginPassword_${passwordLogin.provider}`;
      tab.dataset.i18n = t(own) !== own ? own : "loginPassword";
      tab.textContent = t(tab.dataset.i18n);
    } else selectTab("token");
  });

async function openLogin() {
  await loginMethods;
  const dialog = $("login");
  $("login-error").textContent = "";
  if (!dialog.open) dialog.showModal();
  const tokenTab = $("tab-token").getAttribute("aria-selected") === "true";
  (tokenTab ? $("login-token") : $("login-user")).focus();
}

function selectTab(which) {
  const password = which === "password" && passwordLogin !== null;
  $("tab-password").setAttribute("aria-selected", String(password));
  $("tab-token").setAttribute("aria-selected", String(!password));
  $("tab-password").tabIndex = password ? 0 : -1;
  $("tab-token").tabIndex = password ? -1 : 0;
  $("pane-password").hidden = !password;
  $("pane-token").hidden = password;
}

function wireLogin() {
  $("tab-password").addEventListener("click", () => selectTab("password"));
  $("tab-token").addEventListener("click", () => selectTab("token"));
  for (const tab of [$("tab-password"), $("tab-token")]) {
    tab.addEventListener("keydown", (e) => {
      if (e.key !== "ArrowRight" && e.key !== "ArrowLeft") return;
      const next = tab.id === "tab-password" || !passwordLogin ? "token" : "password";
      selectTab(next);
      $(`tab-${next}`).focus();
    });
  }
  $("login").addEventListener("cancel", (e) => {
    if (!token()) e.preventDefault(); // nothing to go back to
  });
  $("login-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const error = $("login-error");
    error.textContent = "";
    const password = $("tab-password").getAttribute("aria-selected") === "true";
    $("login-submit").disabled = true;
    try {
      if (password) await loginPassword();
      else await loginToken();
      $("login-pass").value = "";
      $("login").close();
      loggedIn();
    } catch (err) {
      error.textContent = err.message;
    } finally {
      $("login-submit").disabled = false;
    }
  });
}

async function loginPassword() {
  const username = $("login-user").value.trim();
  const password = $("login-pass").value;
  if (!username || !password) throw new Error(t("loginMissing"));
  let data;
  try {
    data = await api(passwordLogin.url, { method: "POST", body: { username, password }, bearer: null, quiet401: true });
  } catch (err) {
    if (err.status === 404) throw new Error(t("loginNoErp"));
    if (unavailable(err.status, err.body)) throw new Error(t("loginErpUnavailable"));
    throw new Error(t("loginFailed", { reason: err.message }));
  }
  const user = data.user || {};
  saveLogin(data.token, { name: user.name || user.username || username, provider: passwordLogin.provider });
}

async function loginToken() {
  const value = $("login-token").value.trim();
  if (!value) throw new Error(t("loginMissingToken"));
  try {
    await api("/api/agent/sessions?limit=1", { bearer: value, quiet401: true });
  } catch (err) {
    throw new Error(err.status === 401 ? t("loginWrongToken") : t("loginFailed", { reason: err.message }));
  }
  let name = value;
  try {
    const me = await api("/api/auth/me", { bearer: value, quiet401: true });
    name = (me.profile && me.profile.name) || me.userId || value;
  } catch {
    /* no /api/auth/me on this server: show the token's name */
  }
  saveLogin(value, { name, provider: "dev" });
}

function loggedIn() {
  const reattach = state.expired;
  state.expired = false;
  endOutage();
  $("banner").hidden = true;
  showWho();
  loadList(true);
  if (reattach && state.sessionId) openConversation(state.sessionId, false); // the same conversation, new token
  else if (!reattach) start();
}

async function logout() {
  try {
    await api("/api/auth/logout", { method: "POST", quiet401: true });
  } catch {
    /* not an ERP login, or already expired */
  }
  stopFollowing();
  forgetLogin();
  state.list.items = [];
  renderList();
  newChat(false);
  $("who").textContent = "";
  openLogin();
}

// ---- messages to the user -------------------------------------------------------------------------

function toast(text) {
  const el = h("div", { class: "toast", role: "alert" });
  el.textContent = text;
  document.body.append(el);
  window.setTimeout(() => el.remove(), 5000);
}

boot();
