"""String operations the CPU target compiles differently from the GPU: same results (Python's ``str``), less work
per byte where a CPU pays for it. They replace helpers of ``operations`` by name for numba's CPU target only
(``lowering._register_operations``); the CUDA target keeps ``operations``' own, so GPU kernels are unchanged
(``benchmarks/probes/cuda_sources.py`` checks their source and PTX).

- ``concat`` (``a + b``): byte by byte.
- ``_case`` (``upper``, ``lower``, ``swapcase``): an ASCII row byte by byte, in one pass after a check that it is
  ASCII (the shared version sizes the result in a pass of its own, then writes through the word writer's helper
  calls); other rows the shared way. docs/strings.md has the measures.
- ``_replace``: ``s.replace(old, new[, count])`` with a non-empty ``old`` no longer counts the characters of
  ``s`` first (only an empty ``old`` needs them), and a byte compares with ``old``'s first byte before a
  match is tried. Where ``new`` is no longer than ``old`` the result is written in one pass into a block of
  ``len(s)`` bytes, of which it keeps what it wrote; otherwise a first pass counts the matches (nothing is made
  when there are none) and a second writes the result. A full arena gives an empty string either way (the
  host runs the launch again). Bytes
  are written one by one (``set_byte``): the shared version copies the runs between matches through calls of
  the word writer's helpers, which a CPU does not inline. At 10^6 rows of ``s.replace("a", "b")`` the
  kernel took 35 ms before, most of it in the count of characters (docs/strings.md).
"""

from __future__ import annotations

import types as pytypes
from typing import Any

from . import operations

__all__ = ["CPU_HELPERS", "GENERAL", "bind_cpu"]


def _replace(original, s, old, new, count):
    """``operations._replace`` (the same result), for a CPU: see the module docstring."""
    m = size_of(old)
    if m == 0:
        return _replace_general(original, s, old, new, count)
    n, k = size_of(s), size_of(new)
    first = byte_at(old, 0)
    limit, size = (count if count >= 0 else n + 1), n  # no longer than s where new is no longer than old
    if k > m:  # a longer result: its matches counted first (none: s itself)
        matches, at = 0, 0
        while matches < limit and at <= n - m:
            if byte_at(s, at) == first and (m == 1 or matches_at(s, old, at)):
                matches += 1
                at += m
            else:
                at += 1
        if matches == 0:
            return substring(original, 0, n)
        limit, size = matches, n + matches * (k - m)
    out = new_string(size)
    if size_of(out) < size:  # the arena is full: an empty string, and the host runs the launch again
        return out
    at, j, done = 0, 0, 0
    while at < n:  # byte by byte: a CPU stores a byte as fast as a word, and nothing here is a call
        if done < limit and at <= n - m and byte_at(s, at) == first and (m == 1 or matches_at(s, old, at)):
            for q in range(k):
                set_byte(out, j + q, byte_at(new, q))
            j += k
            at += m
            done += 1
        else:
            set_byte(out, j, byte_at(s, at))
            j += 1
            at += 1
    return substring(out, 0, j)  # where new is shorter than old, the first j bytes of the block are the result


def concat(a, b):
    """``a + b``, byte by byte (the shared version copies through the word writer's helper calls)."""
    va, vb = view_of(a), view_of(b)
    na, nb = size_of(va), size_of(vb)
    out = new_string(na + nb)
    for q in range(na):
        set_byte(out, q, byte_at(va, q))
    for q in range(nb):
        set_byte(out, na + q, byte_at(vb, q))
    return out


def _case(s, mode):
    """``operations._case`` (the same result) for a CPU: an ASCII row under upper, lower or swapcase (modes 0-2)
    mapped byte by byte into a block of its own size; other rows, and title and capitalize, the shared version
    (which sizes the result in a pass of its own and writes through the word writer's helper calls)."""
    n = size_of(s)
    if mode > 2:
        return _case_general(s, mode)
    for q in range(n):
        if byte_at(s, q) >= 0x80:
            return _case_general(s, mode)
    out = new_string(n)
    if size_of(out) < n:  # the arena is full: an empty string, and the host runs the launch again
        return out
    for q in range(n):
        b = byte_at(s, q)
        if mode != 1 and 97 <= b <= 122:  # a-z, upper or swapcase
            b -= 32
        elif mode != 0 and 65 <= b <= 90:  # A-Z, lower or swapcase
            b += 32
        set_byte(out, q, b)
    return out


CPU_HELPERS = {"_replace": _replace, "concat": concat, "_case": _case}
GENERAL = ("_replace", "_case")  # the shared versions these call (as ``_replace_general``...) for what they do not do


def bind_cpu(names: dict[str, Any]) -> dict[str, Any]:
    """The CPU versions of ``CPU_HELPERS``, with ``names`` (the CPU target's intrinsics and helper stubs, the
    shared versions among them as ``_replace_general`` and so on, and tables) as their globals."""
    namespace = dict(vars(operations))
    namespace.update(names)
    return {name: pytypes.FunctionType(f.__code__, namespace, name, f.__defaults__) for name, f in CPU_HELPERS.items()}
