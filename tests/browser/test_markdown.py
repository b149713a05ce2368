"""The chat page's Markdown renderer (markdown.js) on its own, in the browser: the structure it
builds, and that markup and script URLs stay text."""

from __future__ import annotations

from typing import Any

from tests.browser.conftest import BROWSER
from tests.servers import ServerProcess

pytestmark = BROWSER

RENDER = """async (cases) => {
  const { renderMarkdown } = await import("/chat/markdown.js");
  return cases.map((source) => {
    const box = document.createElement("div");
    box.append(renderMarkdown(source));
    const links = [...box.querySelectorAll("a")].map((a) => [a.textContent, a.getAttribute("href")]);
    const tags = [...box.querySelectorAll("*")].map((e) => e.tagName.toLowerCase());
    return { html: box.innerHTML, text: box.textContent, links, tags };
  });
}"""

CASES: list[tuple[str, Any]] = [
    ("# 标题\n\n段落 **粗** *斜* `code` ~~删~~", lambda r: r["tags"] == ["h3", "p", "strong", "em", "code", "del"]),
    (
        "| 名称 | 金额 |\n|:---|---:|\n| a \\| b | 1,200.50 |\n| c | 3 |",
        lambda r: (
            r["tags"][:3] == ["div", "table", "thead"] and 'class="align-right"' in r["html"] and "a | b" in r["text"]
        ),
    ),
    ("- 一\n  - 一.一\n- 二\n\n1. x\n2. y", lambda r: r["tags"] == ["ul", "li", "ul", "li", "li", "ol", "li", "li"]),
    ("```sql\nSELECT '<b>' FROM t\n```", lambda r: r["tags"] == ["pre", "code"] and "<b>" in r["text"]),
    ("> 引用 **要点**", lambda r: r["tags"] == ["blockquote", "p", "strong"]),
    ("<img src=x onerror=alert(1)><script>alert(2)</script>", lambda r: r["tags"] == ["p"] and "<img" in r["text"]),
    (
        "[a](javascript:alert(1)) [b](JAVASCRIPT:alert(1)) [c](data:text/html,x) [d](vbscript:x)",
        lambda r: r["links"] == [],
    ),
    (
        "[好](https://example.invalid/a?b=1) 与 http://example.invalid/报告。结束",
        lambda r: (
            r["links"]
            == [
                ["好", "https://example.invalid/a?b=1"],
                ["http://example.invalid/报告", "http://example.invalid/%E6%8A%A5%E5%91%8A"],
            ]
        ),
    ),
    (
        "[x](java\tscript:alert(1)) [y]( javascript:alert(1))",
        lambda r: all(not h.startswith("javascript") for _, h in r["links"]),
    ),
    ("**[粗链接](https://example.invalid)**", lambda r: r["tags"] == ["p", "strong", "a"]),
    ("snake_case_name and __dunder__", lambda r: r["tags"] == ["p"]),
]


def test_markdown_structure_and_safety(browser: Any, chat_server: ServerProcess) -> None:
    page = browser.new_page()
    try:
        page.goto(chat_server.url + "/chat")
        results = page.evaluate(RENDER, [source for source, _ in CASES])
        assert page.evaluate("typeof window.alert") == "function"
    finally:
        page.close()
    failures = [(source, r) for (source, check), r in zip(CASES, results, strict=True) if not check(r)]
    assert not failures, failures
    for r in results:
        assert "<script" not in r["html"] and "<img" not in r["html"]
