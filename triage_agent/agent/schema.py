"""JSON schemas derived from a function's signature and docstring (never hand-written).

The first parameter (the loaded run) is hidden from the model. Parameter descriptions
come from the docstring's `Args:` section.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Literal, get_args, get_origin

from triage_agent.errors import ToolRefusal

_PRIMITIVES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _type_schema(tp: Any) -> dict[str, Any]:
    origin = get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return _type_schema(args[0])
        return {"anyOf": [_type_schema(a) for a in args]}
    if origin is Literal:
        values = list(get_args(tp))
        return {"type": _PRIMITIVES[type(values[0])], "enum": values}
    if origin in (list, tuple):
        (item,) = get_args(tp)[:1] or (str,)
        return {"type": "array", "items": _type_schema(item)}
    if origin is dict:
        _, value = get_args(tp)
        return {"type": "object", "additionalProperties": _type_schema(value)}
    if tp in _PRIMITIVES:
        return {"type": _PRIMITIVES[tp]}
    raise TypeError(f"no JSON schema for {tp!r}")


def _doc_parts(doc: str) -> tuple[str, dict[str, str]]:
    doc = inspect.cleandoc(doc or "")
    head, _, rest = doc.partition("Args:")
    params: dict[str, str] = {}
    for m in re.finditer(r"^\s*(\w+):\s*(.+?)(?=^\s*\w+:|\Z)", rest, re.M | re.S):
        params[m.group(1)] = " ".join(m.group(2).split())
    return " ".join(head.split()), params


def function_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """The `tools` entry for `fn`, skipping its first (hidden) parameter."""
    sig = inspect.signature(fn)
    hints = typing.get_type_hints(fn)
    description, param_docs = _doc_parts(fn.__doc__ or "")
    props: dict[str, Any] = {}
    required: list[str] = []
    for name in list(sig.parameters)[1:]:
        param = sig.parameters[name]
        schema = _type_schema(hints[name])
        if name in param_docs:
            schema["description"] = param_docs[name]
        if param.default is inspect.Parameter.empty:
            required.append(name)
        else:
            schema["default"] = param.default
        props[name] = schema
    return {"type": "function", "function": {
        "name": fn.__name__, "description": description,
        "parameters": {"type": "object", "properties": props, "required": required, "additionalProperties": False}}}


def bind_arguments(fn: Callable[..., Any], args: dict[str, Any]) -> dict[str, Any]:
    """Check the model's arguments against the signature; raises ValueError with a message for the model."""
    sig = inspect.signature(fn)
    hints = typing.get_type_hints(fn)
    visible = list(sig.parameters)[1:]
    unknown = [k for k in args if k not in visible]
    if unknown:
        raise ToolRefusal(f"unknown argument(s) {', '.join(unknown)}; {fn.__name__} takes {', '.join(visible) or 'none'}")
    out: dict[str, Any] = {}
    for name in visible:
        param = sig.parameters[name]
        if name not in args:
            if param.default is inspect.Parameter.empty:
                raise ToolRefusal(f"missing required argument '{name}'")
            continue
        out[name] = _coerce(name, args[name], hints[name])
    return out


def _coerce(name: str, value: Any, tp: Any) -> Any:
    origin = get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in get_args(tp):
            return None
        args = [a for a in get_args(tp) if a is not type(None)]
        return _coerce(name, value, args[0])
    if origin is Literal:
        if value not in get_args(tp):
            raise ToolRefusal(f"'{name}' must be one of {list(get_args(tp))}")
        return value
    if origin is dict:
        if not isinstance(value, dict):
            raise ToolRefusal(f"'{name}' must be an object")
        _, vt = get_args(tp)
        return {str(k): _coerce(f"{name}.{k}", v, vt) for k, v in value.items()}
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise ToolRefusal(f"'{name}' must be an array")
        (it,) = get_args(tp)[:1] or (str,)
        return [_coerce(name, v, it) for v in value]
    if tp is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if tp is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if tp is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if tp is str and isinstance(value, str):
        return value
    if tp is bool and isinstance(value, bool):
        return value
    raise ToolRefusal(f"'{name}' must be a {_PRIMITIVES.get(tp, tp)}")
