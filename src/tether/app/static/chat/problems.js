// What went wrong, in the page's language: a field's problem from a 422 answer (beside its input),
// and a request's failure (the server's reason, or that the login lapsed).

import { t } from "./i18n.js";
import { formatNumber } from "./refbox.js";

// A field problem in the UI's language when its code is known (the server's message otherwise).
// ``field``: the field's declaration (its bounds fill in the text); ``detail``: the lines' (minLines, maxLines).
export function problemText(problem, field, detail) {
  const type = field && field.type;
  const code = problem.field === "details" && problem.code === "required" ? "min_lines" : problem.code;
  let key = `problem_${code}`;
  if (code === "type" && (type === "integer" || type === "number")) key = `problem_type_${type}`;
  else if (code === "min" && field && field.positive && !(field.min > 0)) key = "problem_positive";
  const vars = {
    min: formatNumber(field && field.min),
    max: formatNumber(field && field.max),
    n: formatNumber(code === "min_lines" ? (detail && detail.minLines) || 1 : detail && detail.maxLines),
  };
  const text = t(key, Object.fromEntries(Object.entries(vars).filter(([, v]) => v !== null && v !== undefined)));
  return text === key || /\{\w+\}/.test(text) ? problem.message || problem.code || "invalid" : text;
}

export function failure(error) {
  if (error && error.status === 401) return t("loginLapsed"); // the banner offers the new login
  // an ApiError's message is the person's: a coded refusal in the page's language, else the server's sentence
  return (error && error.message) || (error && error.body && error.body.error) || String(error);
}
