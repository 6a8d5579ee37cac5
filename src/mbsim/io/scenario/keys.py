"""Dotted TOML keys (``robot.pendulum.q0."root_joint.z"``) and where a key is in the text:
splitting and formatting keys, and the context that makes every error one sentence naming the
source, the line (found by scanning the text: tomllib keeps no positions), the key and the
value."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path

from mbsim.io.scenario.types import ScenarioError

_BARE_KEY_RE = re.compile(r"[A-Za-z0-9_-]+")
_KEY_TOKEN = r"(?:[A-Za-z0-9_-]+|\"(?:[^\"\\]|\\.)*\"|'[^']*')"
_KEY_TOKEN_RE = re.compile(_KEY_TOKEN)
_DOTTED_RE = re.compile(rf"\s*{_KEY_TOKEN}(?:\s*\.\s*{_KEY_TOKEN})*\s*")


_NO_VALUE = object()


class _Ctx:
    """Where messages point: the source label, its text (for line numbers) and which keys came
    from overrides/flags (those have no line, and their paths are relative to the cwd)."""

    def __init__(
        self, label: str, text: str, base_dir: Path, everything_overridden: bool = False
    ) -> None:
        self.label = label
        self.text = text
        self.base_dir = base_dir
        self.overridden: set[tuple] = set()
        #: the value each override set (path -> value), for messages
        self.override_values: dict[tuple, object] = {}
        self.everything_overridden = everything_overridden

    def is_overridden(self, path: tuple) -> bool:
        if self.everything_overridden:
            return True
        path = tuple(str(p) for p in path)
        return any(path[: len(p)] == p for p in self.overridden)

    def error(self, path: tuple, why: str, value: object = _NO_VALUE) -> ScenarioError:
        key = _fmt_path(path)
        shown = "" if value is _NO_VALUE else f" = {format_value(value)}"
        if self.is_overridden(path):
            where = f"{self.label}:" if self.everything_overridden else f"{self.label}: override"
            return ScenarioError(f"{where} {key}{shown}: {why}.")
        line = _locate(self.text, path) if self.text else None
        beside = self._beside(path)
        if beside:
            # a key of the file made invalid by an override next to it (a changed mode, a
            # signal's t against its samples): the override is the source, the line the
            # place, unless the element is the overrides' own (neither it nor, for a key
            # next to an override, its table is in the file)
            spath = tuple(str(p) for p in path)
            inside = any(o[: len(spath)] == spath for o in self.overridden)
            in_file = self._in_file(spath) or (not inside and self._in_file(spath[:-1]))
            at = f" (line {line})" if line and in_file else ""
            return ScenarioError(f"{self.label}: {beside}: {key}{shown}{at}: {why}.")
        where = f"{self.label}, line {line}" if line else self.label
        return ScenarioError(f"{where}: {key}{shown}: {why}.")

    def _in_file(self, path: tuple) -> bool:
        """Whether the file's text holds the key ``path`` (True when it cannot be read)."""
        if not hasattr(self, "_raw"):
            try:
                self._raw = tomllib.loads(self.text)
            except tomllib.TOMLDecodeError:
                self._raw = None
        node = self._raw
        if node is None:
            return True
        for part in path:
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return False
        return True

    def _beside(self, path: tuple) -> str:
        """The overrides of keys next to ``path`` (in the same table) or inside it, as
        ``override KEY = VALUE`` phrases joined by ", "; "" for none."""
        path = tuple(str(p) for p in path)
        near = [
            o for o in sorted(self.overridden)
            if (len(o) == len(path) and o[:-1] == path[:-1]) or o[: len(path)] == path
        ]  # fmt: skip
        out = []
        for o in near:
            shown = (
                f" = {format_value(self.override_values[o])}" if o in self.override_values else ""
            )
            out.append(f"override {_fmt_path(o)}{shown}")
        return ", ".join(out)

    def base_for(self, path: tuple) -> Path:
        """Folder a relative path at ``path`` is relative to."""
        return Path.cwd() if self.is_overridden(path) else self.base_dir


def _fmt_path(path: Iterable) -> str:
    parts = []
    for p in path:
        p = str(p)
        parts.append(p if _BARE_KEY_RE.fullmatch(p) else json.dumps(p))
    return ".".join(parts) if parts else "(top level)"


def format_value(value: object) -> str:
    """A value as one short TOML-like phrase for error messages (strings quoted, tables named)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _locate(text: str, path: tuple) -> int | None:
    """Best-effort line number of the TOML line that defines ``path`` (or its closest
    enclosing key/table). tomllib keeps no positions, so the text is scanned: table headers,
    array-of-table headers (counted for indices) and ``key =`` lines."""
    header: tuple = ()
    counts: dict[tuple, int] = {}
    best_len, best_line = 0, None
    target = tuple(str(p) for p in path)
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        cand: tuple | None
        m = re.match(r"^\[\[\s*([^\[\]]+?)\s*\]\]\s*(#.*)?$", s)
        if m:
            name = split_key(m.group(1))
            if name is None:
                continue
            counts[name] = counts.get(name, -1) + 1
            header = (*name, str(counts[name]))
            cand = header
        elif (m := re.match(r"^\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$", s)) and "=" not in s:
            name = split_key(m.group(1))
            if name is None:
                continue
            header = name
            cand = header
        else:
            m = re.match(rf"^({_KEY_TOKEN}(?:\s*\.\s*{_KEY_TOKEN})*)\s*=", s)
            if not m:
                continue
            key = split_key(m.group(1))
            if key is None:
                continue
            cand = header + key
        if len(cand) > best_len and target[: len(cand)] == cand:
            best_len, best_line = len(cand), lineno
    return best_line


def split_key(text: str) -> tuple[str, ...] | None:
    """Split a TOML dotted key into its parts (quotes removed); None if it is not one."""
    if not _DOTTED_RE.fullmatch(text):
        return None
    parts = []
    for tok in _KEY_TOKEN_RE.findall(text):
        if tok.startswith('"'):
            try:
                tok = json.loads(tok)
            except json.JSONDecodeError:
                return None
        elif tok.startswith("'"):
            tok = tok[1:-1]
        parts.append(tok)
    return tuple(parts)
