"""Typing of string operations and literals, for one numba target at a time.

Strings are views (``StringView``), literals (``Utf8ConstantType``) and new strings (``ManagedString``);
every operation takes any of them. ``len(s)`` is an int64 (code points); comparisons and ``in`` are bools;
``startswith`` / ``endswith`` bools, ``find`` / ``rfind`` / ``index`` / ``rindex`` / ``count`` int64s; the
``is*`` predicates bools. Operations that make strings (``upper``, ``+``, ``*``, ``replace``, ``strip``,
slices, ``zfill``, ``ljust``, ``str(n)``, ...) give a ``ManagedString``; ``int(s)`` an int64 and
``float(s)`` a float64. A literal types as ``Utf8ConstantType`` because arrowdev swaps the UDF's string
constants for :class:`~arrowdev.udf.compile.strings.literals.Utf8Constant` before compiling.
"""

from __future__ import annotations

import operator
from typing import Any

from .literals import Utf8Constant, to_str
from .names import COMPARISONS, METHODS, PREDICATES
from .numba_types import string_types

_RESULTS = {"startswith": "boolean", "endswith": "boolean", "find": "int64", "rfind": "int64", "count": "int64",
            "index": "int64", "rindex": "int64"}

# method -> accepted argument kinds: "s" a string, "i" an integer; a tuple per accepted arity
NEW_STRING_METHODS = {
    "upper": [()], "lower": [()], "swapcase": [()], "title": [()], "capitalize": [()],
    "strip": [(), ("s",)], "lstrip": [(), ("s",)], "rstrip": [(), ("s",)],
    "replace": [("s", "s"), ("s", "s", "i")], "zfill": [("i",)],
    "ljust": [("i",), ("i", "s")], "rjust": [("i",), ("i", "s")], "center": [("i",), ("i", "s")],
}


def _matches(args: tuple, kinds: tuple, stringlike: tuple) -> bool:
    from numba.core import types

    if len(args) != len(kinds):
        return False
    return all(isinstance(a, stringlike) if k == "s" else isinstance(a, types.Integer) for a, k in zip(args, kinds))


def register_typing(target: Any) -> None:
    from numba.core import types

    t = string_types()
    stringlike = t.stringlike
    templates = target.templates

    target.typeof_impl.register(Utf8Constant)(lambda value, context: t.Utf8ConstantType(value.data))

    def typed_call(function: Any, rule: Any) -> None:
        @target.type_callable(function)
        def _type(context):
            return rule

    typed_call(len, lambda s: types.int64 if isinstance(s, stringlike) else None)
    typed_call(int, lambda s: types.int64 if isinstance(s, stringlike) else None)
    typed_call(float, lambda s: types.float64 if isinstance(s, stringlike) else None)
    typed_call(to_str, lambda x: t.managed_string if isinstance(x, stringlike) or (
        isinstance(x, types.Integer) and (x.signed or x.bitwidth < 64)) else None)

    def not_two_literals(a, b) -> bool:
        return isinstance(a, stringlike) and isinstance(b, stringlike) and not (
            isinstance(a, t.Utf8ConstantType) and isinstance(b, t.Utf8ConstantType))

    for op in (*COMPARISONS, operator.contains):
        typed_call(op, lambda a, b: types.boolean if not_two_literals(a, b) else None)
    typed_call(operator.add, lambda a, b: t.managed_string if not_two_literals(a, b) else None)

    def repeat(a, b):
        if (isinstance(a, stringlike) and isinstance(b, types.Integer)) or (
                isinstance(b, stringlike) and isinstance(a, types.Integer)):
            return t.managed_string
        return None

    typed_call(operator.mul, repeat)

    def item(s, index):
        if isinstance(s, stringlike) and isinstance(index, (types.Integer, types.SliceType)):
            return t.managed_string
        return None

    typed_call(operator.getitem, item)

    class StringAttributes(templates.AttributeTemplate):
        pass

    def method(name: str, result: Any, arities: list[tuple]) -> None:
        def resolve(self, s, args, kws):
            if not kws and any(_matches(args, kinds, stringlike) for kinds in arities):
                return templates.signature(result, *args)

        setattr(StringAttributes, f"resolve_{name}", templates.bound_function(f"String.{name}")(resolve))

    for name in (*METHODS, "index", "rindex"):
        method(name, getattr(types, _RESULTS[name]), [("s",)])
    for name in PREDICATES:
        method(name, types.boolean, [()])
    for name, arities in NEW_STRING_METHODS.items():
        method(name, t.managed_string, arities)
    for cls in stringlike:
        target.infer_getattr(type(f"{cls.__name__}Attributes", (StringAttributes,), {"key": cls}))
