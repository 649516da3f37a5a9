"""Set one member of a JSON (or JSON-with-comments) configuration file, keeping the rest.

The file is parsed into json-five's round-trip model, which keeps every comment,
blank line and the author's indentation; only the member that changes is
rendered anew, indented like its neighbours. Plain JSON files are first checked
with the standard library's strict parser, so a file its application would
reject is refused rather than "fixed"; JSON-with-comments files (VS Code's
``mcp.json``) may hold comments and trailing commas, as their application allows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Final

from json5.dumper import ModelDumper
from json5.dumper import dumps as dump_model
from json5.loader import ModelLoader
from json5.loader import loads as load_model
from json5.model import DoubleQuotedString, JSONArray, JSONObject, JSONText, Value
from json5.utils import JSON5DecodeError

from metacortex.appconfig.errors import Malformed

_INDENT: Final = re.compile(r"\n([ \t]+)\S")


def load(text: str, *, comments: bool, where: str) -> Any:
    """The data of the file, or Malformed saying where it is broken."""
    if not comments:
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            raise Malformed(
                f"{where} is not valid JSON ({error.msg} at line {error.lineno}, column "
                f"{error.colno})"
            ) from None
    try:
        return load_model(text)
    except (JSON5DecodeError, ValueError) as error:
        raise Malformed(f"{where} is not valid JSON with comments ({error})") from None


def set_member(text: str, path: Sequence[str], value: Any, *, where: str) -> str:
    """``text`` with the member at ``path`` (keys from the root object down) set to
    ``value``; objects on the way are created. Malformed when a step is not an object."""
    unit = _indent_unit(text)
    if not text.strip():
        nested: Any = value
        for key in reversed(path):
            nested = {key: nested}
        return json.dumps(nested, indent=unit, ensure_ascii=False) + "\n"
    model: JSONText = load_model(text, loader=ModelLoader())
    node = model.value
    if not isinstance(node, JSONObject):
        raise Malformed(f"{where} does not hold a JSON object at its top")
    for depth, key in enumerate(path):
        index = _find(node, key)
        last = depth == len(path) - 1
        if index is None:
            remaining: Any = value
            for later in reversed(path[depth + 1 :]):
                remaining = {later: remaining}
            _append(node, key, remaining, depth + 1, unit)
            break
        if last:
            old = node.values[index]
            new = _value_model(value, depth + 1, unit)
            new.wsc_before, new.wsc_after = old.wsc_before, old.wsc_after
            node.values[index] = new
            break
        child = node.values[index]
        if not isinstance(child, JSONObject):
            dotted = ".".join(path[: depth + 1])
            raise Malformed(f"{where}: {dotted} is not an object")
        node = child
    # ModelDumper is the documented dumper for models; json-five types dumps() narrower.
    rendered: str = dump_model(model, dumper=ModelDumper())  # type: ignore[arg-type]
    return rendered


def upsert_item(
    text: str, path: Sequence[str], key: str, item: dict[str, Any], *, where: str
) -> str:
    """``text`` with the array at ``path`` holding ``item``: the element whose ``key``
    equals ``item[key]`` is replaced, or ``item`` is appended (the array is created)."""
    data = load(text, comments=True, where=where) if text.strip() else {}
    if text.strip():
        refuse_repeated(text, path, where=where)
    found = get_member(data, path)
    if found is None:
        return set_member(text, path, [item], where=where)
    if not isinstance(found, list):
        raise Malformed(f"{where}: {'.'.join(path)} is not an array")
    unit = _indent_unit(text)
    model: JSONText = load_model(text, loader=ModelLoader())
    node: Any = model.value
    for step in path:
        index = _find(node, step)
        assert index is not None  # found above
        node = node.values[index]
    assert isinstance(node, JSONArray)
    depth = len(path)
    new = _value_model(item, depth + 1, unit)
    if item in found:
        return text  # already there, as it is
    for index, element in enumerate(found):
        if isinstance(element, dict) and element.get(key) == item[key]:
            old = node.values[index]
            new.wsc_before, new.wsc_after = old.wsc_before, old.wsc_after
            node.values[index] = new
            break
    else:
        _append_value(node, new, depth, unit)
    rendered: str = dump_model(model, dumper=ModelDumper())  # type: ignore[arg-type]
    return rendered


def refuse_repeated(text: str, path: Sequence[str], *, where: str) -> None:
    """Malformed when an object on ``path`` names the next key more than once: the
    applications read the last of them, so an edit of the first would be lost."""
    node: Any = load_model(text, loader=ModelLoader()).value
    for depth, key in enumerate(path):
        if not isinstance(node, JSONObject):
            return
        found = [index for index, candidate in enumerate(node.keys) if _key_text(candidate) == key]
        if len(found) > 1:
            dotted = ".".join(path[: depth + 1])
            raise Malformed(
                f"{where} has {dotted} {len(found)} times; applications read only the last, "
                "so the file is left as it is: keep one and run again"
            )
        if not found:
            return
        node = node.values[found[0]]


def get_member(data: Any, path: Sequence[str]) -> Any:
    """The value at ``path`` in loaded data, or None."""
    for key in path:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def container_problem(data: Any, path: Sequence[str], where: str) -> str | None:
    """Why the objects along ``path`` cannot hold a member, or None."""
    if not isinstance(data, dict):
        return f"{where} does not hold a JSON object at its top"
    for depth, key in enumerate(path):
        if key not in data:
            return None
        data = data[key]
        if not isinstance(data, dict):
            return f"{where}: {'.'.join(path[: depth + 1])} is not an object"
    return None


# ---------------------------------------------------------------- the model
def _find(node: JSONObject, key: str) -> int | None:
    for index, candidate in enumerate(node.keys):
        if _key_text(candidate) == key:
            return index
    return None


def _key_text(key: Any) -> str:
    characters = getattr(key, "characters", None)
    if isinstance(characters, str):
        return characters
    name = getattr(key, "name", None)
    return name if isinstance(name, str) else ""


def _append(node: JSONObject, key: str, value: Any, depth: int, unit: str) -> None:
    """Add ``key: value`` as the object's last member, on its own line."""
    new_key = DoubleQuotedString(key, raw_value=json.dumps(key, ensure_ascii=False))
    new_key.wsc_before = ["\n" + unit * depth]
    new_value = _value_model(value, depth, unit)
    new_value.wsc_before = [" "]
    _close_after(node, new_value, depth, unit)
    node.keys.append(new_key)
    node.values.append(new_value)


def _append_value(node: JSONArray, new_value: Value, depth: int, unit: str) -> None:
    """Add ``new_value`` as the array's last element, on its own line."""
    new_value.wsc_before = ["\n" + unit * (depth + 1)]
    _close_after(node, new_value, depth + 1, unit)
    node.values.append(new_value)


def _close_after(node: JSONObject | JSONArray, new_value: Value, depth: int, unit: str) -> None:
    """Move the line break before the closing bracket after ``new_value``, the new last."""
    closing = "\n" + unit * (depth - 1)
    if node.values:
        last = node.values[-1]
        if node.trailing_comma is None and all(isinstance(w, str) for w in last.wsc_after):
            last.wsc_after = []  # the line break before "}" moves after the new member
            new_value.wsc_after = [closing]
        elif node.trailing_comma is None:
            new_value.wsc_after = [closing]
    else:
        if all(isinstance(w, str) for w in node.leading_wsc):
            node.leading_wsc = []
        elif isinstance(node.leading_wsc[-1], str) and not node.leading_wsc[-1].strip():
            node.leading_wsc.pop()  # the indentation before "}": the new member brings its own
        new_value.wsc_after = [closing]


def _value_model(value: Any, depth: int, unit: str) -> Value:
    """``value`` as a model node rendered at ``depth`` levels of ``unit``."""
    text = json.dumps(value, indent=unit, ensure_ascii=False)
    text = text.replace("\n", "\n" + unit * depth)
    parsed: JSONText = load_model(text, loader=ModelLoader())
    node: Value = parsed.value
    node.wsc_before, node.wsc_after = [], []
    return node


def _indent_unit(text: str) -> str:
    found = _INDENT.search(text)
    return found.group(1) if found else "  "
