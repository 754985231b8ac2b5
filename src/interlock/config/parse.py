"""Reading TOML, YAML and HOOK.md front matter, keeping line numbers.

Neither ``tomllib`` nor ``yaml.safe_load`` says where a value came from, so
each reader also returns a locator: ``locate(("hooks", 0, "timeout"))`` gives
the line a value was written on (or the nearest enclosing one), so an error
can point at it.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from interlock.config.model import ConfigDoc, HookDef, PermissionRule
from interlock.engine.errors import ConfigError

if TYPE_CHECKING:
    import yaml

PathKey = tuple[str | int, ...]
Locator = Callable[[PathKey], int | None]


def _nowhere(_key: PathKey) -> int | None:
    return None


def _table_locator(lines: dict[PathKey, int]) -> Locator:
    def locate(key: PathKey) -> int | None:
        for n in range(len(key), 0, -1):
            line = lines.get(key[:n])
            if line is not None:
                return line
        return None

    return locate


_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_.\-\"']+)\s*=")


def _toml_lines(text: str, offset: int = 0) -> dict[PathKey, int]:
    """Map key paths to line numbers for ordinary TOML (headers and key = value)."""
    lines: dict[PathKey, int] = {}
    counts: dict[str, int] = {}
    table: PathKey = ()
    for no, raw in enumerate(text.splitlines(), start=1 + offset):
        header = _HEADER.match(raw)
        if header:
            parts = [p.strip().strip("\"'") for p in header.group(2).split(".")]
            if header.group(1) == "[[":
                counts[parts[0]] = counts.get(parts[0], -1) + 1
                table = (parts[0], counts[parts[0]], *parts[1:])
            elif parts[0] in counts:  # [hooks.requires] after [[hooks]]
                table = (parts[0], counts[parts[0]], *parts[1:])
            else:
                table = tuple(parts)
            lines.setdefault(table, no)
            continue
        key = _KEY.match(raw)
        if key:
            parts = [p.strip("\"'") for p in key.group(1).split(".")]
            lines.setdefault((*table, *parts), no)
    return lines


def read_toml(text: str, file: Path, *, line_offset: int = 0) -> tuple[dict[str, Any], Locator]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"at line (\d+)", msg)
        line = int(m.group(1)) + line_offset if m else None
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", msg)
        raise ConfigError(f"not valid TOML: {msg}", file=str(file), line=line,
                          fix="check the quoting and brackets on that line") from None
    return data, _table_locator(_toml_lines(text, line_offset))


def _yaml_lines(node: yaml.Node, path: PathKey, out: dict[PathKey, int], offset: int) -> None:
    import yaml

    out.setdefault(path, node.start_mark.line + 1 + offset)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = (*path, str(key_node.value))
            out.setdefault(key, key_node.start_mark.line + 1 + offset)
            _yaml_lines(value_node, key, out, offset)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _yaml_lines(item, (*path, i), out, offset)


def read_yaml(text: str, file: Path, *, line_offset: int = 0) -> tuple[dict[str, Any], Locator]:
    import yaml  # here: a project of TOML files never loads it (~15 ms a process start)

    try:
        data = yaml.safe_load(text)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 + line_offset if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"not valid YAML: {problem}", file=str(file), line=line,
                          fix="check the indentation and quoting on that line") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError("the top level must be a mapping", file=str(file), line=1 + line_offset,
                          fix="write `key: value` lines, e.g. `hooks:` with a list under it")
    lines: dict[PathKey, int] = {}
    if node is not None:
        _yaml_lines(node, (), lines, line_offset)
    return data, _table_locator(lines)


def read_config_text(text: str, file: Path) -> tuple[dict[str, Any], Locator]:
    if file.suffix in (".yaml", ".yml"):
        return read_yaml(text, file)
    return read_toml(text, file)


def split_front_matter(text: str, file: Path) -> tuple[dict[str, Any], Locator, str]:
    """HOOK.md: TOML between ``+++`` lines or YAML between ``---`` lines; the rest is docs."""
    lines = text.splitlines(keepends=True)
    first = lines[0].strip() if lines else ""
    if first not in ("+++", "---"):
        raise ConfigError("HOOK.md has no front matter", file=str(file), line=1,
                          fix="start the file with `+++` (TOML) or `---` (YAML), then the "
                              "hook's fields, then the same line again")
    for i in range(1, len(lines)):
        if lines[i].strip() == first:
            head = "".join(lines[1:i])
            body = "".join(lines[i + 1:]).strip()
            break
    else:
        raise ConfigError(f"front matter opened with {first!r} is never closed", file=str(file),
                          line=1, fix=f"add a line holding only {first} after the fields")
    reader = read_toml if first == "+++" else read_yaml
    data, locate = reader(head, file, line_offset=1)
    return data, locate, body


def _did_you_mean(word: str, known: list[str]) -> str:
    import difflib  # only for a mistake: loading a config does not import it

    close = difflib.get_close_matches(word, known, n=1)
    return f"did you mean {close[0]!r}?" if close else f"known fields: {', '.join(known)}"


def convert_error(exc: msgspec.ValidationError, cls: type[msgspec.Struct], file: Path,
                  base: PathKey, locate: Locator) -> ConfigError:
    """Turn a msgspec error into one that names the file, line, field and fix."""
    text = str(exc)
    unknown = re.match(r"Object contains unknown field `([^`]+)`(?: - at `\$(.*)`)?", text)
    if unknown:
        field = unknown.group(1)
        sub = _parse_at(unknown.group(2) or "")
        known = _fields_at(cls, sub)
        return ConfigError(f"unknown field {field!r}", file=str(file),
                           line=locate((*base, *sub, field)),
                           field=".".join(str(p) for p in (*sub, field)),
                           fix=_did_you_mean(field, known))
    missing = re.match(r"Object missing required field `([^`]+)`(?: - at `\$(.*)`)?", text)
    if missing:
        sub = _parse_at(missing.group(2) or "")
        return ConfigError("is required", file=str(file), line=locate((*base, *sub)),
                           field=".".join(str(p) for p in (*sub, missing.group(1))),
                           fix=f"add {missing.group(1)} = ...")
    m = re.match(r"(.*) - at `\$(.*)`", text)
    if m:
        sub = _parse_at(m.group(2))
        allowed = _allowed_values(cls, sub)
        fix = _type_fix(m.group(1))
        if allowed:
            given = re.search(r"value '(.*)'", m.group(1))
            import difflib

            close = difflib.get_close_matches(given.group(1) if given else "", allowed, n=1)
            fix = f"use one of: {', '.join(allowed)}" + (
                f" (did you mean {close[0]!r}?)" if close else "")
        return ConfigError(m.group(1), file=str(file), line=locate((*base, *sub)),
                           field=".".join(str(p) for p in sub) or None, fix=fix)
    return ConfigError(text, file=str(file), line=locate(base))


def _type_fix(msg: str) -> str:
    if "`float`" in msg or "`int`" in msg:
        return "write a number without quotes"
    if "`bool`" in msg:
        return "write true or false without quotes"
    if "array" in msg:
        return 'write a list, e.g. ["a", "b"]'
    if "one of" in msg.lower() or "Invalid enum value" in msg:
        return "use one of the values the docs list (docs/configuration.md)"
    return "see docs/configuration.md for the field's type"


def _allowed_values(cls: type[msgspec.Struct], sub: PathKey) -> list[str]:
    """The values a Literal or enum field at ``sub`` accepts ([] for any other field)."""
    import enum
    import typing

    names = [p for p in sub if isinstance(p, str)]
    if not names:
        return []
    fields = {f.name: f.type for f in msgspec.structs.fields(cls)} \
        if len(names) == 1 else {}
    pending, out = [fields.get(names[0])], []
    while pending:
        tp = pending.pop()
        if typing.get_origin(tp) is typing.Literal:
            out += [str(a) for a in typing.get_args(tp)]
        elif isinstance(tp, type) and issubclass(tp, enum.Enum):
            out += [str(m.value) for m in tp]
        else:
            pending += list(typing.get_args(tp))
    return out


def _parse_at(at: str) -> PathKey:
    out: list[str | int] = []
    for part in re.findall(r"\.([A-Za-z0-9_\-]+)|\[(\d+)\]", at):
        out.append(part[0] if part[0] else int(part[1]))
    return tuple(out)


def _fields_at(cls: type[msgspec.Struct], sub: PathKey) -> list[str]:
    current: Any = cls
    for part in sub:
        if isinstance(part, int):
            continue
        hints = msgspec.structs.fields(current)
        nxt = next((f for f in hints if f.name == part), None)
        if nxt is None or not isinstance(nxt.type, type) \
                or not issubclass(nxt.type, msgspec.Struct):
            return []
        current = nxt.type
    return [f.name for f in msgspec.structs.fields(current)]


def to_hookdef(data: Any, file: Path, base: PathKey, locate: Locator,
               default_name: str | None = None) -> HookDef:
    if not isinstance(data, dict):
        raise ConfigError("a hook must be a table of fields", file=str(file), line=locate(base),
                          fix="write it as [[hooks]] with name = ..., events = [...]")
    if default_name is not None and "name" not in data:
        data = {"name": default_name, **data}
    try:
        return msgspec.convert(data, HookDef, str_keys=True)
    except msgspec.ValidationError as exc:
        raise convert_error(exc, HookDef, file, base, locate) from None


def to_permission(data: Any, file: Path, base: PathKey, locate: Locator,
                  source: str) -> PermissionRule:
    if not isinstance(data, dict):
        raise ConfigError("a permission rule must be a table", file=str(file), line=locate(base),
                          fix='write [[permissions]] with tool = "...", action = "allow"')
    try:
        rule = msgspec.convert({**data, "source": source}, PermissionRule)
    except msgspec.ValidationError as exc:
        raise convert_error(exc, PermissionRule, file, base, locate) from None
    return rule


def to_doc(data: dict[str, Any], file: Path, locate: Locator) -> ConfigDoc:
    try:
        return msgspec.convert(data, ConfigDoc)
    except msgspec.ValidationError as exc:
        raise convert_error(exc, ConfigDoc, file, (), locate) from None
