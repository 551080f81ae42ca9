"""A decoder of the table form (`tables = "auto"`), written again from its documentation in
crates/core/src/table/mod.rs ("The form") as a client would: JSON in which an array of
objects may be `[N]{k1,…}:` + newline + N rows (cells split by `,`, an empty or left-out
trailing cell = key absent, a cell `[n]{…}:` opens a sub-table whose rows follow the row,
indented one more space)."""

from __future__ import annotations

import json
import re
from typing import Any

_HEADER = re.compile(r"\[(\d+)\]\{")
_JSON = json.JSONDecoder(parse_constant=lambda c: {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[c])
_WORDS = {"true": True, "false": False, "null": None}


class _Reader:
    def __init__(self, s: str) -> None:
        self.s, self.i = s, 0

    def fail(self, what: str) -> ValueError:
        return ValueError(f"table form: expected {what} at {self.i}: {self.s[self.i:self.i + 40]!r}")

    def ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t\r\n":
            self.i += 1

    def string(self) -> str:
        v, end = _JSON.raw_decode(self.s, self.i)
        if not isinstance(v, str):
            raise self.fail("a string")
        self.i = end
        return v

    def header(self) -> tuple[int, list[str]] | None:
        m = _HEADER.match(self.s, self.i)
        if not m:
            return None
        self.i = m.end()
        keys = []
        while True:
            if self.s.startswith('"', self.i):
                keys.append(self.string())
            else:
                j = self.i
                while self.s[j] not in ",}\n":
                    j += 1
                keys.append(self.s[self.i:j])
                self.i = j
            c = self.s[self.i]
            self.i += 1
            if c == "}":
                break
            if c != ",":
                raise self.fail("`,` or `}` in a header")
        if self.s[self.i] != ":":
            raise self.fail("`:` after a header")
        self.i += 1
        return int(m.group(1)), keys

    def json(self) -> Any:
        self.ws()
        c = self.s[self.i]
        if c == "{":
            self.i += 1
            out: dict = {}
            self.ws()
            if self.s[self.i] == "}":
                self.i += 1
                return out
            while True:
                self.ws()
                k = self.string()
                self.ws()
                if self.s[self.i] != ":":
                    raise self.fail("`:`")
                self.i += 1
                out[k] = self.json()
                self.ws()
                c = self.s[self.i]
                self.i += 1
                if c == "}":
                    return out
                if c != ",":
                    raise self.fail("`,` or `}`")
        if c == "[":
            h = self.header()
            if h is not None:
                if self.s[self.i] != "\n":
                    raise self.fail("a newline after a header")
                self.i += 1
                return self.rows(h[0], h[1], 0)
            self.i += 1
            arr: list = []
            self.ws()
            if self.s[self.i] == "]":
                self.i += 1
                return arr
            while True:
                arr.append(self.json())
                self.ws()
                c = self.s[self.i]
                self.i += 1
                if c == "]":
                    return arr
                if c != ",":
                    raise self.fail("`,` or `]`")
        v, self.i = _JSON.raw_decode(self.s, self.i)
        return v

    def rows(self, n: int, keys: list[str], level: int) -> list[dict]:
        out = []
        for _ in range(n):
            if not self.s.startswith(" " * level, self.i):
                raise self.fail("a row's indentation")
            self.i += level
            cells: list = []
            while self.s[self.i] != "\n":
                cells.append(self.cell())
                if self.s[self.i] == ",":
                    self.i += 1
                    if self.s[self.i] == "\n":
                        cells.append(_ABSENT)
                elif self.s[self.i] != "\n":
                    raise self.fail("`,` or a newline after a cell")
            self.i += 1
            if len(cells) > len(keys):
                raise self.fail("no more cells than keys")
            row = {}
            for k, c in zip(keys, cells):
                if c is _ABSENT:
                    continue
                if isinstance(c, _Sub):
                    row[k] = self.rows(c.n, c.keys, level + 1)
                else:
                    row[k] = c
            out.append(row)
        return out

    def cell(self) -> Any:
        c = self.s[self.i]
        if c in ",\n":
            return _ABSENT
        if c == '"':
            return self.string()
        if c in "[{":
            h = self.header()
            if h is not None:
                return _Sub(*h)
            v, self.i = _JSON.raw_decode(self.s, self.i)
            return v
        j = self.i
        while j < len(self.s) and self.s[j] not in ",\n":
            j += 1
        word, self.i = self.s[self.i:j], j
        if word in _WORDS:
            return _WORDS[word]
        if word[0].isdigit() or word[0] == "-" or word in ("NaN", "Infinity"):
            return _JSON.decode(word)
        return word


class _Sub:
    def __init__(self, n: int, keys: list[str]) -> None:
        self.n, self.keys = n, keys


_ABSENT = object()


def decode(text: str) -> Any:
    """The JSON value a text in the table form stands for (plain JSON reads as itself)."""
    try:
        return _JSON.decode(text)
    except ValueError:
        pass
    r = _Reader(text)
    v = r.json()
    r.ws()
    if r.i != len(text):
        raise r.fail("the end of the text")
    return v
