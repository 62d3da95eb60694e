"""numba's typing failures said in a UDF author's terms: which operation on which kinds of values is not
supported, and what to write instead.

numba says ``No implementation of function Function(<built-in function add>) found for signature:`` and,
on the next line, ``>>> add(StringView, Literal[int](1))``. A UDF author wrote ``s + 1``: this module
reads the operation (``+``) and the operands (a string, an integer) off those lines, and says what is
supported instead. f-strings are recognised in the UDF's bytecode (numba types one as ``str(x)`` joined
with ``+``, which would otherwise be reported as a ``+``).
"""

from __future__ import annotations

import dis
import re
from typing import Callable

__all__ = ["construct_line", "in_user_terms", "uses_fstring"]

_OPERATORS = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%", "pow": "**",
    "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "neg": "unary -", "pos": "unary +",
    "not_": "not", "invert": "~", "and_": "&", "or_": "|", "xor": "^", "lshift": "<<", "rshift": ">>",
    "contains": "in", "getitem": "indexing x[...]", "setitem": "item assignment x[...] = v",
    "iadd": "+=", "isub": "-=", "imul": "*=", "itruediv": "/=",
}
_CALLED = re.compile(r"No implementation of function Function\((?:<built-in function (\w+)>|<function (\w+) at "
                     r"[^>]*>|<class '(\w+)'>)\) found for signature")
_SIGNATURE = re.compile(r">>> \w+\((.*)\)\s*$")
_FSTRING_OPS = {"FORMAT_VALUE", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC", "BUILD_STRING", "CONVERT_VALUE"}


def uses_fstring(f: Callable, line: int | None) -> bool:
    """True when the UDF builds an f-string (on ``line``, when given)."""
    for ins in dis.get_instructions(f):
        where = ins.positions.lineno if ins.positions is not None else None
        if ins.opname in _FSTRING_OPS and (line is None or where == line):
            return True
    return False


_BUILDS = {"DictType": {"BUILD_MAP", "BUILD_CONST_KEY_MAP", "MAP_ADD", "DICT_UPDATE", "DICT_MERGE"}}


def construct_line(f: Callable, text: str) -> int | None:
    """The UDF's line that builds what numba's message ``text`` complains of, where the message points
    only into numba's own code (a dict's ``d[k] = v``); None when unknown."""
    for name, ops in _BUILDS.items():
        if name in text:
            for ins in dis.get_instructions(f):
                if ins.opname in ops and ins.positions is not None and ins.positions.lineno:
                    return ins.positions.lineno
    return None


def _split_args(text: str) -> list[str]:
    """numba's argument list split at its top-level commas."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([{<"
        depth -= ch in ")]}>"
        if ch == "," and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        out.append(text[start:].strip())
    return out


def _kind(numba_type: str) -> str:
    """A numba type's name as a UDF author knows the value: 'a string', 'an integer', ..."""
    t = numba_type
    if t.startswith(("StringView", "unicode_type", "Utf8Constant", "Literal[str]", "ManagedString")):
        return "a string"
    if t.startswith("OptionalType(") or t.startswith("Optional("):
        return f"{_kind(t[t.index('(') + 1:-1])} or ad.NA"
    prefixes = [("Literal[int]", "an integer"), ("Literal[bool]", "a bool"), ("int", "an integer"),
                ("uint", "an integer"), ("float", "a float"), ("bool", "a bool"), ("DictType", "a dict"),
                ("list(", "a list"), ("ListType", "a list"), ("reflected list", "a list"), ("UniTuple", "a tuple"),
                ("Tuple(", "a tuple"), ("array(", "an array"), ("none", "None"), ("NoneType", "None")]
    return next((kind for prefix, kind in prefixes if t.startswith(prefix)), t)


def _advice(operation: str, kinds: list[str]) -> str:
    """What to write instead, for the cases a newcomer meets first."""
    if "a dict" in kinds or operation == "dict()":
        return ("dicts are not supported in UDFs: a UDF returns one value per row (a number, a bool, a string "
                "or ad.NA); make one column per value")
    if operation == "str()":
        return ("str() converts integers and strings in a UDF, not floats: return the number and format it "
                "outside the UDF (pyarrow.compute.cast(col, pa.string()))")
    if operation == "+" and "a string" in kinds and any(k != "a string" for k in kinds):
        return "a string is added only to a string: convert the other value first, str(n) for an integer"
    return "see docs/udf.md and docs/strings.md for what UDFs support"


def in_user_terms(f: Callable, lines: list[str], line: int | None) -> str | None:
    """The reason for numba's failure ``lines`` (its message, split and stripped) in the UDF author's
    terms; None when the failure is not one this module reads."""
    if uses_fstring(f, line):
        return ("f-strings are not supported in UDFs: build the string with + and str() "
                "(e.g. \"v=\" + str(x); str() converts integers and strings)")
    index = next((i for i, text in enumerate(lines) if _CALLED.search(text)), None)
    if index is None:
        return None
    builtin, function, cls = _CALLED.search(lines[index]).groups()  # type: ignore[union-attr]
    if builtin:
        operation = _OPERATORS.get(builtin, f"{builtin}()")
    else:  # arrowdev swaps the builtin str for its own to_str (strings/literals.py)
        operation = f"{'str' if function == 'to_str' else function or cls}()"
    signature = next((m for text in lines[index + 1:index + 3] if (m := _SIGNATURE.search(text))), None)
    kinds = [_kind(a) for a in _split_args(signature.group(1))] if signature else []
    if "a dict" in kinds or operation == "dict()":
        return _advice("dict()", kinds)
    on = f" on {' and '.join(kinds)}" if kinds else ""
    return f"`{operation}`{on} is not supported: {_advice(operation, kinds)}"
