"""The scripted model's brain, the same for every client API (tests/clients).

A pager calls the case's tool once; while the result it was handed shows a `next_cursor`
(raw, or JSON-escaped inside a string as structuredContent renderings and Gemini's wrapping
show it), it calls `read_more` with that cursor. When the client does not offer `read_more`
but offers a tool-search tool (Claude Code's `ToolSearch`, Codex's `tool_search`), it calls that
first, as a model must, and counts the round trip. Deterministic from the conversation: the
client resends the history on every request, and `step` reads it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: A cursor as the proxy writes it (`<hex id>.<page>`), after any JSON escaping is undone.
CURSOR = re.compile(r'"next_cursor"\s*:\s*"([0-9a-f]+\.[0-9]+)"')
#: Most steps of one conversation: a loop is a bug.
MAX_STEPS = 200


@dataclass
class Call:
    """Call the tool `name` (as the client spells it) with `arguments`."""

    name: str
    arguments: dict


@dataclass
class Final:
    """Answer with `text` and stop."""

    text: str


def cursor_in(text: str) -> str | None:
    """The last `next_cursor` shown in `text`, raw or JSON-escaped (any depth), else None."""
    flat = text.replace("\\", "")
    found = CURSOR.findall(flat)
    return found[-1] if found else None


def pick(tool_names: list[str], suffix: str) -> str | None:
    """The offered tool whose name is `suffix` or ends with it after a separator (`mcp__fs__read_more`,
    `fs_read_more`, `budget_read_more`), else None."""
    for n in tool_names:
        if n == suffix:
            return n
    for n in tool_names:
        if n.endswith(suffix) and not n[: -len(suffix)][-1:].isalnum():
            return n
    return None


@dataclass
class Pager:
    tool: str
    arguments: dict
    search_tools: tuple = ("ToolSearch", "tool_search")
    #: Every handed result of the case's tool and of read_more, verbatim, in order.
    handed: list = field(default_factory=list)
    #: Tool-search calls made to reach read_more.
    search_trips: int = 0
    #: Every step's action (for debugging).
    actions: list = field(default_factory=list)
    #: Tool-search calls made to reach the case's own tool, when the client deferred it (Claude
    #: Code defers MCP tools behind ToolSearch): a client's normal way, counted apart.
    case_search_trips: int = 0
    #: Names the client lists as loadable by a tool search but not yet offered (the adapter sets it:
    #: Claude Code's "deferred tools" list), to search for the case's tool by its full name.
    deferred: list = field(default_factory=list)

    def step(self, tool_names: list[str], results: list[str]) -> Call | Final:
        """The next action, given the tools offered in this request and the text handed for each
        earlier tool call of the conversation (search results included), in order."""
        # The handed results of our own calls: every result but the searches'.
        ours = [r for r, a in zip(results, self.actions) if not a.get("search")]
        ours += results[len(self.actions):]
        self.handed = ours
        action = self._decide(tool_names, results, ours)
        if isinstance(action, Call):
            self.actions = self.actions[: len(results)]
            self.actions.append({"name": action.name, "search": action.name in self.search_tools
                                 or any(action.name.endswith(s) for s in self.search_tools)})
        return action

    def _decide(self, tool_names, results, ours):
        if len(results) >= MAX_STEPS:
            return Final("too many steps")
        if not ours:
            name = pick(tool_names, self.tool)
            if name is None:
                search = next((n for n in tool_names if n in self.search_tools), None)
                full = pick(list(self.deferred), self.tool)
                if search is not None and self.case_search_trips == 0:
                    self.case_search_trips += 1
                    query = f"select:{full}" if full else self.tool
                    args = {"query": query, "max_results": 5} if search == "ToolSearch" else {"query": query}
                    return Call(search, args)
                name = full or self.tool
            return Call(name, dict(self.arguments))
        cursor = cursor_in(ours[-1])
        if cursor is None:
            return Final("done")
        name = pick(tool_names, "read_more")
        if name is not None:
            return Call(name, {"cursor": cursor})
        search = next((n for n in tool_names if n in self.search_tools), None)
        if search is not None and self.search_trips < 5:
            self.search_trips += 1
            args = {"query": "select:read_more", "max_results": 5} if search == "ToolSearch" else {"query": "read_more"}
            return Call(search, args)
        return Final("read_more is not offered")
