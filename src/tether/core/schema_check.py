"""A value against a tool argument's JSON schema, before the tool runs (DSL replay overrides).

The subset tools declare: ``type`` (one or a list), ``enum``, ``const``, ``anyOf`` / ``oneOf``,
``items``, ``properties`` / ``required`` / ``additionalProperties``, ``$ref`` into ``$defs``.
Types are JSON's: an integer is not a boolean, a number is not a string of digits.
"""

from __future__ import annotations

import json
from typing import Any

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


def default_schema(value: Any) -> dict[str, Any]:
    """The schema of a compiled default when no tool describes the argument."""
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, list | tuple):
        return {"type": "array"}
    if isinstance(value, dict):
        return {"type": "object"}
    return {}


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = (root.get("$defs") or {}).get(ref.removeprefix("#/$defs/"))
        if isinstance(target, dict):
            return {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def _is(value: Any, json_type: str) -> bool:
    if json_type == "integer":
        return (isinstance(value, int) or (isinstance(value, float) and value.is_integer())) and not isinstance(
            value, bool
        )
    if json_type == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    kinds = _JSON_TYPES.get(json_type)
    return kinds is None or isinstance(value, kinds)


def schema_mismatch(value: Any, schema: dict[str, Any], root: dict[str, Any]) -> str | None:
    """``None`` when ``value`` fits ``schema`` (the JSON-schema subset tools declare: type, enum,
    const, anyOf/oneOf, items, properties/required/additionalProperties, $ref); otherwise what is
    wrong, "" when the expected type says it all."""
    schema = _resolve(schema, root)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        problems = [schema_mismatch(value, option, root) for option in options]
        if None in problems:
            return None
        # the value has the type of an option but not its shape: say what is wrong inside
        return next((p for p in problems if p), "")
    if "enum" in schema and value not in schema["enum"]:
        return ""
    if "const" in schema and value != schema["const"]:
        return ""
    declared = schema.get("type")
    if declared is not None:
        kinds = declared if isinstance(declared, list) else [declared]
        if not any(_is(value, k) for k in kinds):
            return ""
    return _container_mismatch(value, schema, root)


def _container_mismatch(value: Any, schema: dict[str, Any], root: dict[str, Any]) -> str | None:
    if isinstance(value, list | tuple) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            if schema_mismatch(item, schema["items"], root) is not None:
                return f"item {i}: expected {describe(schema['items'], root)}, got {shown(item)}"
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        missing = [k for k in schema.get("required") or () if k not in value]
        if missing:
            return f"missing key {missing[0]!r}"
        others = schema.get("additionalProperties")
        for key, item in value.items():
            inner = props.get(key, others if isinstance(others, dict) else None)
            if inner is None and key not in props and others is False:
                return f"unknown key {key!r}"
            if inner is not None and schema_mismatch(item, inner, root) is not None:
                return f"key {key!r}: expected {describe(inner, root)}, got {shown(item)}"
    return None


def describe(schema: dict[str, Any], root: dict[str, Any]) -> str:
    """The expected type in words: ``integer``, ``array of string or null``, ``one of 'EUR', 'USD'``."""
    schema = _resolve(schema, root)
    options = schema.get("anyOf") or schema.get("oneOf")
    if options:
        return " or ".join(dict.fromkeys(describe(o, root) for o in options))
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    declared = schema.get("type")
    if declared is None:
        return "any JSON value"
    if isinstance(declared, list):
        return " or ".join(str(k) for k in declared)
    if declared == "array" and isinstance(schema.get("items"), dict):
        inner = describe(schema["items"], root)
        return f"array of ({inner})" if " or " in inner else f"array of {inner}"
    return str(declared)


def shown(value: Any) -> str:
    kind = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), "null" if value is None else type(value).__name__
    )
    text = json.dumps(value, ensure_ascii=False, default=str)
    return f"{kind} {text if len(text) <= 40 else text[:39] + '…'}"
