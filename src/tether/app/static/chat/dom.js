// DOM building without HTML strings: every text goes in through textContent / text nodes.

export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key === "on") for (const [name, fn] of Object.entries(value)) el.addEventListener(name, fn);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "value" || key === "checked" || key === "disabled" || key === "hidden" || key === "open") el[key] = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

let counter = 0;
export function uid(prefix = "id") {
  counter += 1;
  return `${prefix}-${counter}`;
}

// A URL the page may put in an href: http(s) anywhere, or a path on this server.
export function safeUrl(raw) {
  if (typeof raw !== "string" || !raw.trim()) return null;
  let url;
  try {
    url = new URL(raw.trim(), window.location.origin);
  } catch {
    return null;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return null;
  return url;
}

export function announce(text) {
  const el = document.getElementById("announcer");
  if (!el) return;
  el.textContent = "";
  window.setTimeout(() => { el.textContent = text; }, 30);
}

// Small inline SVG icons (no icon font, no emoji font needed).
const ICONS = {
  check: "M5 12.5l4.5 4.5L19 7.5",
  cross: "M7 7l10 10M17 7L7 17",
  clock: "M12 7v5l3 2M12 3a9 9 0 1 0 0 18a9 9 0 1 0 0-18",
  edit: "M4 20h4L19 9l-4-4L4 16zM13.5 6.5l4 4",
  archive: "M4 5h16v4H4zM6 9v10h12V9M10 13h4",
  unarchive: "M4 5h16v4H4zM6 9v10h12V9M12 17v-5M9.5 14.5L12 12l2.5 2.5",
  sync: "M19 12a7 7 0 0 1-12.2 4.7M5 12a7 7 0 0 1 12.2-4.7M17.5 3.5v4h-4M6.5 20.5v-4h4",
  link: "M10 14a4 4 0 0 0 5.7 0l3-3a4 4 0 0 0-5.7-5.7l-1 1M14 10a4 4 0 0 0-5.7 0l-3 3a4 4 0 0 0 5.7 5.7l1-1",
};

export function icon(name, cls = "") {
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("class", `icon icon-${name} ${cls}`.trim());
  const path = document.createElementNS(NS, "path");
  path.setAttribute("d", ICONS[name]);
  svg.append(path);
  return svg;
}
