"""Separating what a model wrote *into* ``content`` that is not the answer.

Servers without a reasoning parser (vLLM's default, many Ollama and llama.cpp builds) leave
Qwen3's and DeepSeek-R1's ``<think>…</think>`` in ``content``; a tool-call parser that failed
(vLLM's hermes parser on a truncated or slightly malformed call) leaves ``<tool_call>{…}</tool_call>``
there. ``ContentSplitter`` takes content as it streams and keeps three parts apart: the text the
user may see (returned piece by piece as soon as it cannot be the start of a tag), the reasoning,
and the tool-call text. A reply whose visible text begins with ``{`` is held back whole, since it
may be a tool call written as bare JSON; the caller decides at the end. It must never let a
``<think>`` or ``<tool_call>`` tag through to the visible text.
"""

from __future__ import annotations

THINK = ("<think>", "</think>")
TOOL_CALL = ("<tool_call>", "</tool_call>")
_OPENERS = {THINK[0]: "think", TOOL_CALL[0]: "call"}
_CLOSERS = {"think": THINK[1], "call": TOOL_CALL[1]}


class ContentSplitter:
    """Feed content deltas with ``feed``, then ``close``; read ``visible``, ``reasoning``,
    ``calls`` (one text per ``<tool_call>`` block, an unclosed one included) and ``held``."""

    def __init__(self, starts_thinking: bool = False) -> None:
        """``starts_thinking``: the model's chat template opened ``<think>`` in the prompt
        (DeepSeek-R1 and its distills, QwQ, Qwen3 thinking models), so its output starts inside the
        thinking and only ``</think>`` shows. Everything is then held back until that tag; if it
        never comes, or the server turns out to parse the reasoning itself, the text is the answer."""
        self._visible: list[str] = []
        self._reasoning: list[str] = []
        self.calls: list[str] = []
        self.held = ""  # visible text beginning with "{", not yet streamed
        self._buffer = ""
        self._inside: str | None = "think" if starts_thinking else None  # "think" | "call"
        self._presumed = starts_thinking  # inside a <think> the output never opened
        self._started = False  # visible text other than whitespace went out
        self._holding = False

    @property
    def visible(self) -> str:
        return "".join(self._visible)

    @property
    def reasoning(self) -> str:
        text = "".join(self._reasoning)
        return text.lstrip().removeprefix(THINK[0]) if text.lstrip().startswith(THINK[0]) else text

    def feed(self, delta: str) -> str:
        """Take one content delta; return the visible text that may be streamed now."""
        self._buffer += delta
        out: list[str] = []
        while self._buffer:
            if self._inside is not None:
                if not self._take_inside():
                    break
                continue
            if not self._take_outside(out):
                break
        return "".join(out)

    def close(self) -> str:
        """End of content: flush what was kept back for a possible tag; return visible text."""
        shown = self.not_thinking()  # no </think> came: the presumed thinking was the answer
        rest, self._buffer = self._buffer, ""
        if self._inside == "think":
            self._reasoning.append(rest)
        elif self._inside == "call":
            self.calls[-1] += rest
        elif rest:
            return shown + self._emit(rest)
        return shown

    def not_thinking(self) -> str:
        """The presumed thinking was the answer after all (no ``</think>`` came, or the server sent
        the reasoning in its own field): it becomes visible; return it to stream now."""
        if not self._presumed:
            return ""
        text = "".join(self._reasoning) + self._buffer
        self._reasoning, self._buffer, self._inside, self._presumed = [], "", None, False
        return self.feed(text)

    def _take_inside(self) -> bool:
        closer = _CLOSERS[self._inside or "think"]
        at = self._buffer.find(closer)
        if at < 0:
            keep = _partial_suffix(self._buffer, (closer,))
            self._inside_text(self._buffer[: len(self._buffer) - keep])
            self._buffer = self._buffer[len(self._buffer) - keep :]
            return False
        self._inside_text(self._buffer[:at])
        self._buffer = self._buffer[at + len(closer) :]
        self._inside, self._presumed = None, False
        return True

    def _inside_text(self, text: str) -> None:
        if self._inside == "think":
            self._reasoning.append(text)
        else:
            self.calls[-1] += text

    def _take_outside(self, out: list[str]) -> bool:
        found = [(at, tag) for tag in (*_OPENERS, THINK[1]) if (at := self._buffer.find(tag)) >= 0]
        if not found:
            keep = _partial_suffix(self._buffer, (*_OPENERS, THINK[1]))
            out.append(self._emit(self._buffer[: len(self._buffer) - keep]))
            self._buffer = self._buffer[len(self._buffer) - keep :]
            return False
        at, tag = min(found)
        out.append(self._emit(self._buffer[:at]))
        self._buffer = self._buffer[at + len(tag) :]
        if tag == THINK[1]:
            # a closing tag with no opening one: the template opened <think> in the prompt, so all
            # the visible text so far was reasoning (already streamed, but not kept as the answer)
            self._reasoning.append(self.visible + self.held)
            self._visible, self.held, self._started, self._holding = [], "", False, False
            return True
        self._inside = _OPENERS[tag]
        if self._inside == "call":
            self.calls.append("")
        return True

    def _emit(self, text: str) -> str:
        if not text:
            return ""
        if self._holding:
            self.held += text
            return ""
        if not self._started:
            text = text.lstrip()  # the blank lines a model leaves after its </think>
            if not text:
                return ""
            if text.startswith("{"):
                self._holding = True
                self.held += text
                return ""
            self._started = True
        self._visible.append(text)
        return text


def split_content(content: str, starts_thinking: bool = False) -> ContentSplitter:
    """A whole (non-streamed) content, split."""
    splitter = ContentSplitter(starts_thinking)
    splitter.feed(content)
    splitter.close()
    return splitter


def _partial_suffix(text: str, tags: tuple[str, ...]) -> int:
    """The length of the longest end of ``text`` that is the start of one of ``tags``."""
    best = 0
    for tag in tags:
        for n in range(min(len(tag) - 1, len(text)), best, -1):
            if text.endswith(tag[:n]):
                best = n
                break
    return best
