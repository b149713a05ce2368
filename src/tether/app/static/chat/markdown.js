// A small, safe Markdown renderer: headings, paragraphs, lists (nested), tables (with
// alignment), fenced and inline code, bold / italic / strikethrough, block quotes, rules, and
// links with http(s) URLs only (bare URLs become links too). It builds DOM nodes and sets text
// with text nodes only: raw HTML in the source stays visible text, a javascript: link stays text.

import { h, safeUrl } from "./dom.js";

const FENCE = /^\s*(```+|~~~+)\s*([\w+-]*)\s*$/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;
const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const NUMBER = /^[-+]?[¥$€]?\d[\d,]*(\.\d+)?%?$|^[-—–]?$/;
const TABLE_SEP = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;

export function renderMarkdown(source, options = {}) {
  const fragment = document.createDocumentFragment();
  const lines = String(source ?? "").replace(/\r\n?/g, "\n").split("\n");
  blocks(lines, fragment, options);
  return fragment;
}

function blocks(lines, parent, options) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i += 1;
      continue;
    }
    let m = line.match(FENCE);
    if (m) {
      const body = [];
      i += 1;
      while (i < lines.length && !(lines[i].trim().startsWith(m[1][0].repeat(3)) && lines[i].trim().replace(/[`~]/g, "") === "")) {
        body.push(lines[i]);
        i += 1;
      }
      i += 1;
      const code = h("code", { class: m[2] ? `lang-${m[2]}` : null, text: body.join("\n") });
      parent.append(h("pre", {}, code));
      continue;
    }
    m = line.match(HEADING);
    if (m) {
      const level = Math.min(6, m[1].length + 2);
      parent.append(inline(h(`h${level}`), m[2], options));
      i += 1;
      continue;
    }
    if (RULE.test(line)) {
      parent.append(h("hr"));
      i += 1;
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      i = table(lines, i, parent, options);
      continue;
    }
    if (QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && QUOTE.test(lines[i])) {
        inner.push(lines[i].match(QUOTE)[1]);
        i += 1;
      }
      const quote = h("blockquote");
      blocks(inner, quote, options);
      parent.append(quote);
      continue;
    }
    if (ITEM.test(line)) {
      i = list(lines, i, parent, options);
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && !startsBlock(lines, i)) {
      para.push(lines[i].trim());
      i += 1;
    }
    const p = h("p");
    para.forEach((text, n) => {
      if (n) p.append(h("br"));
      inline(p, text, options);
    });
    parent.append(p);
  }
}

function startsBlock(lines, i) {
  const line = lines[i];
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) || ITEM.test(line)
    || (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes("-"));
}

function cells(line) {
  let text = line.trim();
  if (text.startsWith("|")) text = text.slice(1);
  if (text.endsWith("|") && !text.endsWith("\\|")) text = text.slice(0, -1);
  const out = [];
  let cell = "";
  for (let n = 0; n < text.length; n += 1) {
    if (text[n] === "\\" && text[n + 1] === "|") {
      cell += "|";
      n += 1;
    } else if (text[n] === "|") {
      out.push(cell.trim());
      cell = "";
    } else {
      cell += text[n];
    }
  }
  out.push(cell.trim());
  return out;
}

function table(lines, i, parent, options) {
  const head = cells(lines[i]);
  const aligns = cells(lines[i + 1]).map((c) => (c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : c.startsWith(":") ? "left" : null));
  i += 2;
  const rows = [];
  while (i < lines.length && lines[i].trim() && lines[i].includes("|")) {
    rows.push(cells(lines[i]));
    i += 1;
  }
  // columns of numbers read best right-aligned, unless the source says otherwise
  const numeric = head.map((_, n) => rows.length > 0 && rows.every((row) => NUMBER.test((row[n] ?? "").trim())));
  const cell = (tag, text, n) => {
    const align = aligns[n] || (numeric[n] ? "right" : null);
    const classes = [align ? `align-${align}` : "", (text ?? "").length > 40 ? "long" : ""].filter(Boolean).join(" ");
    const el = h(tag, { class: classes || null, scope: tag === "th" ? "col" : null });
    return inline(el, text ?? "", options);
  };
  const thead = h("thead", {}, h("tr", {}, head.map((text, n) => cell("th", text, n))));
  const tbody = h("tbody", {}, rows.map((row) => h("tr", {}, head.map((_, n) => cell("td", row[n], n)))));
  parent.append(h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": head.join(" / ").slice(0, 80) }, h("table", {}, thead, tbody)));
  return i;
}

function list(lines, i, parent, options) {
  const items = [];
  while (i < lines.length) {
    const line = lines[i];
    const m = line.match(ITEM);
    const base = items[0];
    if (m && base && m[1].replace(/\t/g, "    ").length <= base.indent && /\d/.test(m[2]) !== base.ordered) break; // another list
    if (m) {
      items.push({ indent: m[1].replace(/\t/g, "    ").length, ordered: /\d/.test(m[2]), start: parseInt(m[2], 10), text: [m[3]] });
      i += 1;
    } else if (line.trim() && /^\s{2,}/.test(line) && items.length) {
      items[items.length - 1].text.push(line.trim()); // a continuation line
      i += 1;
    } else if (!line.trim() && i + 1 < lines.length && ITEM.test(lines[i + 1])) {
      i += 1; // a blank line between items
    } else {
      break;
    }
  }
  parent.append(build(items, 0, items.length, options));
  return i;
}

function build(items, from, to, options) {
  const first = items[from];
  const el = first.ordered ? h("ol", { start: first.start > 1 ? first.start : null }) : h("ul");
  let n = from;
  while (n < to) {
    const item = items[n];
    const li = h("li");
    item.text.forEach((text, k) => {
      if (k) li.append(h("br"));
      inline(li, text, options);
    });
    let end = n + 1;
    while (end < to && items[end].indent > item.indent) end += 1;
    if (end > n + 1) li.append(build(items, n + 1, end, options));
    el.append(li);
    n = end;
  }
  return el;
}

// ---- inline --------------------------------------------------------------------------------------

const INLINE = [
  { re: /`([^`]+)`/y, make: (m) => h("code", { text: m[1] }) },
  { re: /\*\*(?=\S)([\s\S]*?\S)\*\*/y, make: (m, o) => inline(h("strong"), m[1], o) },
  { re: /~~(?=\S)([\s\S]*?\S)~~/y, make: (m, o) => inline(h("del"), m[1], o) },
  { re: /\*(?=[^\s*])([^*]*?[^\s*])\*/y, make: (m, o) => inline(h("em"), m[1], o) },
  { re: /\[([^\]]*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/y, make: (m, o) => link(m[2], m[1], o) },
  { re: /https?:\/\/[^\s<>()[\]{}"'，。；、！？）】」《》]+/y, make: (m, o) => autolink(m[0], o) },
];

export function inline(parent, text, options = {}) {
  let buffer = "";
  let n = 0;
  const flush = () => {
    if (buffer) parent.append(document.createTextNode(buffer));
    buffer = "";
  };
  outer: while (n < text.length) {
    const ch = text[n];
    if (ch === "\\" && n + 1 < text.length && /[\\`*_[\]()#+\-.!|~>]/.test(text[n + 1])) {
      buffer += text[n + 1];
      n += 2;
      continue;
    }
    if ("`*~[h".includes(ch)) {
      for (const rule of INLINE) {
        rule.re.lastIndex = n;
        const m = rule.re.exec(text);
        if (m) {
          const node = rule.make(m, options);
          if (node instanceof Node) {
            flush();
            parent.append(node);
          } else {
            buffer += node.text;
          }
          n += node && node.consumed !== undefined ? node.consumed : m[0].length;
          continue outer;
        }
      }
    }
    buffer += ch;
    n += 1;
  }
  flush();
  return parent;
}

function link(href, label, options) {
  const url = safeUrl(href);
  const text = label || href;
  if (!url) return { text }; // not http(s): the label stays plain text, nothing to click
  return anchor(url, text, options);
}

function autolink(raw, options) {
  const trimmed = raw.replace(/[.,:;!?]+$/, "");
  const url = safeUrl(trimmed);
  if (!url) return { text: raw };
  const a = anchor(url, trimmed, options);
  a.consumed = trimmed.length;
  return a;
}

function anchor(url, text, options) {
  const a = h("a", { href: url.href, target: "_blank", rel: "noopener noreferrer" });
  a.textContent = text;
  if (options.onLink) options.onLink(a, url);
  return a;
}
