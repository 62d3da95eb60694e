"""Typing of string operations and literals, for one numba target at a time.

``len(s)`` is an int64 (code points); ``==`` ``!=`` ``<`` ``<=`` ``>`` ``>=`` and ``in`` between a view and a
view or literal are bools; ``s.startswith`` / ``endswith`` (bool), ``find`` / ``rfind`` / ``count``
(int64) take one view or literal. A literal types as ``Utf8ConstantType`` because arrowdev swaps the
UDF's string constants for :class:`~arrowdev.udf.strings.literals.Utf8Constant` before compiling.
"""

from __future__ import annotations

import operator
from typing import Any

from .literals import Utf8Constant
from .lowering import COMPARISONS, METHODS, PREDICATES
from .types import string_types

_RESULTS = {"startswith": "boolean", "endswith": "boolean", "find": "int64", "rfind": "int64", "count": "int64"}


def register_typing(target: Any) -> None:
    from numba.core import types

    StringView, _, Utf8ConstantType = string_types()
    stringlike = (StringView, Utf8ConstantType)

    target.typeof_impl.register(Utf8Constant)(lambda value, context: Utf8ConstantType(value.data))

    @target.type_callable(len)
    def _type_len(context):
        def typer(s):
            if isinstance(s, stringlike):
                return types.int64
        return typer

    def binary(op):
        @target.type_callable(op)
        def _type(context):
            def typer(a, b):
                if isinstance(a, stringlike) and isinstance(b, stringlike) and StringView in (type(a), type(b)):
                    return types.boolean
            return typer

    for op in (*COMPARISONS, operator.contains):
        binary(op)

    templates = target.templates

    class StringViewAttributes(templates.AttributeTemplate):
        key = StringView

    def method(name: str) -> None:
        result = getattr(types, _RESULTS[name])

        def resolve(self, s, args, kws):
            if len(args) == 1 and not kws and isinstance(args[0], stringlike):
                return templates.signature(result, args[0])

        setattr(StringViewAttributes, f"resolve_{name}", templates.bound_function(f"StringView.{name}")(resolve))

    for name in METHODS:
        method(name)

    def predicate(name: str) -> None:
        def resolve(self, s, args, kws):
            if not args and not kws:
                return templates.signature(types.boolean)

        setattr(StringViewAttributes, f"resolve_{name}", templates.bound_function(f"StringView.{name}")(resolve))

    for name in PREDICATES:
        predicate(name)
    target.infer_getattr(StringViewAttributes)
