// The API client: the bearer token lives in sessionStorage and goes in the Authorization header
// of every request (the event stream too: fetch + a stream reader, since EventSource cannot send
// headers). It is never put in a URL. A 401 is a login problem (onUnauthorized); a 503
// UPSTREAM_UNAVAILABLE is an outage of the business system behind the login (onUnavailable, with
// the server's Retry-After): the login is still good and must not be asked for again.

import { refusalText } from "./i18n.js";

const KEY = "tether.token";
const PROFILE = "tether.profile";
let onUnauthorized = () => {};
let onUnavailable = () => {};

// Its message is the person's: a coded refusal (a 429's code and params) in the page's language,
// else the server's own sentence.
export class ApiError extends Error {
  constructor(status, body) {
    super(refusalText(body) || (body && body.error) || `HTTP ${status}`);
    this.status = status;
    this.body = body || {};
  }
}

export function token() {
  return sessionStorage.getItem(KEY);
}

export function profile() {
  try {
    return JSON.parse(sessionStorage.getItem(PROFILE) || "null");
  } catch {
    return null;
  }
}

export function saveLogin(value, who) {
  sessionStorage.setItem(KEY, value);
  sessionStorage.setItem(PROFILE, JSON.stringify({ ...(who || {}), at: Date.now() }));
}

export function forgetLogin() {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(PROFILE);
  // what was typed into forms not answered yet (cards.js) is not left in the tab for the next login
  for (const key of Object.keys(sessionStorage)) if (key.startsWith("tether.form.")) sessionStorage.removeItem(key);
}

export function whenUnauthorized(fn) {
  onUnauthorized = fn;
}

export function whenUnavailable(fn) {
  onUnavailable = fn;
}

// An error the page already shows in its banner (login expired, or the ERP is down): no toast.
export function shownInBanner(err) {
  return err instanceof ApiError && (err.status === 401 || unavailable(err.status, err.body));
}

export function unavailable(status, body) {
  return status === 503 && !!body && body.code === "UPSTREAM_UNAVAILABLE";
}

function retryAfter(response, body) {
  const seconds = Number(response.headers.get("Retry-After") || (body && body.retryAfter));
  return Number.isFinite(seconds) && seconds > 0 ? Math.min(seconds, 60) : 5;
}

function headers(extra = {}, bearer = token()) {
  const out = { Accept: "application/json", ...extra };
  if (bearer) out.Authorization = `Bearer ${bearer}`;
  return out;
}

export async function api(path, { method = "GET", body, bearer, quiet401 = false } = {}) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }, bearer) };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(path, init);
  let data = null;
  const text = await response.text();
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = { error: text.slice(0, 200) };
    }
  }
  if (response.status === 401 && !quiet401) onUnauthorized();
  if (unavailable(response.status, data) && !quiet401) onUnavailable(retryAfter(response, data));
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

export async function fetchBlob(path) {
  const response = await fetch(path, { headers: headers({ Accept: "text/html" }) });
  if (response.status === 401) onUnauthorized();
  if (!response.ok) throw new ApiError(response.status, null);
  return response.text();
}

// Follows /events from `after`: calls onEvent(envelope) for each event, in order, exactly once;
// reconnects with Last-Event-ID after a dropped connection. Ends when `signal` aborts, or on
// 401 / 404 (onEnd(status)).
export function followEvents(sessionId, after, { onEvent, onEnd, onState, signal }) {
  let last = after;
  const run = async () => {
    let failures = 0;
    while (!signal.aborted) {
      try {
        const h = headers({ Accept: "text/event-stream" });
        if (last > 0) h["Last-Event-ID"] = String(last);
        const response = await fetch(`/api/agent/sessions/${encodeURIComponent(sessionId)}/events`, {
          headers: h, signal, cache: "no-store",
        });
        if (response.status === 401 || response.status === 404) {
          if (response.status === 401) onUnauthorized();
          onEnd?.(response.status);
          return;
        }
        if (response.status === 503) {
          const body = await response.json().catch(() => null);
          if (unavailable(503, body)) onUnavailable(retryAfter(response, body));
        }
        if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
        onState?.("open");
        failures = 0;
        await readStream(response.body, (frame) => {
          if (frame.data === undefined) return;
          const event = JSON.parse(frame.data);
          if (typeof event.id !== "number" || event.id <= last) return; // already seen
          last = event.id;
          onEvent(event);
        });
      } catch (error) {
        if (signal.aborted) return;
        onState?.("retry", error);
      }
      if (signal.aborted) return;
      failures += 1;
      await sleep(Math.min(400 * failures, 3000));
    }
  };
  run();
  return () => last;
}

async function readStream(body, onFrame) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let frame = {};
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let index;
    while ((index = buffer.search(/\r?\n/)) >= 0) {
      const line = buffer.slice(0, index);
      buffer = buffer.slice(index + (buffer[index] === "\r" ? 2 : 1));
      if (line === "") {
        if (Object.keys(frame).length) onFrame(frame);
        frame = {};
      } else if (!line.startsWith(":")) {
        const colon = line.indexOf(":");
        const name = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        frame[name] = name === "data" && frame.data !== undefined ? `${frame.data}\n${value}` : value;
      }
    }
  }
}

function sleep(ms) {
  return new Promise((resolve) => window.setTimeout(resolve, ms));
}
