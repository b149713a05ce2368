// The search box of a form card's ``ref`` field (a customer, a material, a source bill): what is
// typed is searched, debounced, over the referenced form through the server as the person
// (GET /api/erp/forms/{form}/refs/{column}: their tenant and row scope); the matches show name,
// code and, for materials, spec, unit and list price; arrows, Enter and Esc work as in any
// combobox (WAI-ARIA combobox with a listbox popup). A chosen record sends its code; text typed
// and not chosen is sent as it is, and the server resolves it (or says at the field why not).

import { h, clear, uid } from "./dom.js";
import { lang, t } from "./i18n.js";

const DEBOUNCE_MS = 250;
const LIMIT = 8;

export const formatNumber = (n, digits = 6) => (typeof n === "number" && Number.isFinite(n)
  ? n.toLocaleString(lang() === "en" ? "en" : "zh-CN", { maximumFractionDigits: digits }) : null);

// how a chosen record reads in the box: its code, its name, a material's spec (same-named ones differ by it)
export const refLabel = (c) => [c.code || c.bill_no, c.name || c.customer_name, c.spec].filter(Boolean).join(" ");

function optionBody(c) {
  const name = h("span", { class: "ref-name" });
  name.textContent = c.name || c.customer_name || c.bill_no || c.value;
  const code = h("span", { class: "ref-code" });
  code.textContent = c.code || c.bill_no || "";
  const more = [c.spec, c.unit, c.bill_date].filter(Boolean);
  const price = formatNumber(c.price, 2);
  if (price !== null) more.push(t("refPrice", { price }));
  const detail = h("span", { class: "ref-detail" });
  detail.textContent = more.join(" · ");
  return [h("span", { class: "ref-main" }, name, code), more.length ? detail : null];
}

// ``search(text)`` -> Promise of candidates; ``onChoose(candidate | null)``: the chosen record changed.
export function refBox({ name, search, chosen = null, text = "", onChoose = () => {} }) {
  const listId = uid("ref-list");
  const input = h("input", {
    name,
    type: "text",
    role: "combobox",
    autocomplete: "off",
    spellcheck: "false",
    "aria-autocomplete": "list",
    "aria-expanded": "false",
    "aria-controls": listId,
    placeholder: t("refSearch"),
  });
  const list = h("ul", { id: listId, role: "listbox", class: "ref-list", hidden: true });
  const note = h("p", { class: "ref-note", "aria-live": "polite" });
  const wrap = h("div", { class: "ref-box" }, input, list);
  let current = null; // the chosen record
  let options = [];
  let active = -1;
  let timer = null;
  let asked = 0; // answers to older searches are dropped

  const place = () => {
    const r = input.getBoundingClientRect();
    const below = window.innerHeight - r.bottom > 200 || r.top < 280;
    list.style.left = `${Math.round(r.left)}px`;
    list.style.minWidth = `${Math.round(r.width)}px`;
    list.style.top = below ? `${Math.round(r.bottom + 2)}px` : "";
    list.style.bottom = below ? "" : `${Math.round(window.innerHeight - r.top + 2)}px`;
  };
  const close = () => {
    window.removeEventListener("scroll", place, true);
    window.removeEventListener("resize", place);
    list.hidden = true;
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
    active = -1;
  };
  const mark = (n) => {
    active = n;
    [...list.children].forEach((li, i) => li.setAttribute("aria-selected", i === n ? "true" : "false"));
    const li = list.children[n];
    if (li && li.id) {
      input.setAttribute("aria-activedescendant", li.id);
      li.scrollIntoView({ block: "nearest" });
    } else input.removeAttribute("aria-activedescendant");
  };
  const choose = (c, quiet = false) => {
    current = c;
    input.value = c ? refLabel(c) : input.value;
    input.dataset.chosen = c ? c.value : "";
    note.textContent = c ? t("refChosen", { label: refLabel(c) }) : "";
    close();
    if (!quiet) {
      onChoose(c);
      input.dispatchEvent(new Event("change", { bubbles: true })); // the card keeps its draft
    }
  };
  const show = (found, text) => {
    options = found;
    list.dataset.q = text; // what these matches are for
    clear(list);
    if (!found.length) {
      list.append(h("li", { class: "ref-empty", role: "option", "aria-disabled": "true" }, t("refNone")));
    }
    found.forEach((c, i) => {
      const li = h("li", { id: `${listId}-${i}`, role: "option", "aria-selected": "false", dataset: { value: c.value } }, optionBody(c));
      li.addEventListener("mousedown", (e) => e.preventDefault()); // the input keeps the focus
      li.addEventListener("click", () => choose(c));
      list.append(li);
    });
    list.hidden = false;
    place();
    window.addEventListener("scroll", place, true); // the conversation scrolls under it
    window.addEventListener("resize", place);
    input.setAttribute("aria-expanded", "true");
    mark(found.length ? 0 : -1);
  };
  const run = async () => {
    const n = ++asked;
    try {
      const text = input.value.trim();
      const found = await search(text, LIMIT);
      if (n === asked && document.activeElement === input) show(found, text);
    } catch {
      if (n !== asked) return;
      close();
      note.textContent = t("refUnavailable"); // what is typed is still resolved on the server
    }
  };
  const later = () => {
    clearTimeout(timer);
    timer = setTimeout(run, DEBOUNCE_MS);
  };

  input.addEventListener("input", () => {
    if (current) {
      current = null;
      input.dataset.chosen = "";
      note.textContent = "";
      onChoose(null);
    }
    later();
  });
  input.addEventListener("focus", () => { if (!current) later(); });
  input.addEventListener("blur", () => {
    clearTimeout(timer);
    asked += 1;
    close();
  });
  input.addEventListener("keydown", (e) => {
    const open = !list.hidden;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      if (!open) {
        clearTimeout(timer);
        run();
      } else if (options.length) {
        const step = e.key === "ArrowDown" ? 1 : -1;
        mark((active + step + options.length) % options.length);
      }
    } else if (e.key === "Enter" && open) {
      e.preventDefault(); // choosing is not submitting the form
      if (active >= 0 && options[active]) choose(options[active]);
      else close();
    } else if (e.key === "Escape" && open) {
      e.preventDefault();
      e.stopPropagation();
      close();
    }
  });

  if (chosen && typeof chosen === "object" && chosen.value) choose(chosen, true);
  else input.value = text ?? "";
  return {
    wrap,
    input,
    note,
    get chosen() { return current; },
    // what the form sends: the chosen record's code (or id), else the text as typed
    value: () => (current ? current.value : input.value.trim() || undefined),
    // what a draft keeps: the text, and the record when one was chosen
    draft: () => (current ? { text: input.value, chosen: current } : input.value),
    set disabled(v) { input.disabled = v; },
  };
}
