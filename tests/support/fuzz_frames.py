"""A fuzzer of arrowdev's receive path (issue 30): frames and headers of every sample type, mutated, received
through every wrapping, each case in a child process (:mod:`fuzz_run`), the received object used as a user would.

A case is a seed. From it, :func:`run_case` picks a type of tests/support/samples.py and a layout (whole, sliced,
chunked, empty; as a column, or as a column of a table), serializes it as a sender does (:mod:`fuzz_wrap`: pickle
protocol 5 with out-of-band or in-band buffers, distributed's ``dask`` family alone or through msgpack as on the
wire, the ``dask`` family in row pieces, the ``cuda`` family's packed frame on the CPU), mutates the frames and
the header (:mod:`fuzz_mutate`: truncate, extend, swap, drop, duplicate, flip and poke frames, unaligned frames;
header fields and nodes changed, dropped, duplicated, another type's schema), places every frame next to an
unreadable page (:mod:`guarded`: an over-read is a crash, not a silent read), receives it, and uses what was
accepted (:func:`_use`: full validation, values, PyArrow, slices, ``nbytes``, sent on and received again).

Outcomes (the first word counts): ``refused`` (InvalidArrowError on receipt); ``accepted`` (used without error);
``data`` (accepted, and full validation refused only what no receiver can tell from data: invalid UTF-8, decimals
past their precision, dates and times out of range, a view's prefix or padding, made by a flipped value byte);
``quirk`` (an empty view array at an offset, which PyArrow's importer makes invalid, received or not); ``error``
(accepted, then a clear Python error while used that only the values cause: a timestamp past ``datetime``'s range,
a decimal or time zone no converter takes; or interval[months] values, which PyArrow's Python layer cannot wrap); any other error after receipt is ``ERROR-AFTER-RECEIPT``, a failure);
and the failures: ``REFUSED-OTHER`` (receipt raised something else than InvalidArrowError), ``INVALID`` (accepted,
then full validation refused the structure: accepted but invalid), ``WRONG`` (an unmutated case changed its
values, or what was sent on came back different). A crash or a hang ends the child: :mod:`fuzz_run` counts it.

``python3 -m tests.support.fuzz_frames SEED`` (from the repository's root) reruns one case here and says what it did
(``ARROWDEV_FUZZ_VERBOSE=1``: before it runs).
"""

from __future__ import annotations

import os
import random
import sys
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from . import fuzz_mutate, fuzz_wrap
from .guarded import Arena

# what full validation may refuse in data a receiver accepted: only what the bytes themselves say (a flipped value
# byte makes it), which no size, offset or index check can see; anything else is accepted-but-invalid
DATA_LEVEL = ("invalid utf8", "precision", "whole number of days", "acceptable range", "inlined prefix",
              "padding bytes were not all zero")
# errors while an accepted receipt is used that only the values cause (a flipped byte of a timestamp, a decimal, a
# time zone's name): Python's and pandas' converters refuse them; any other error after receipt is a failure
DATA_ERRORS = ("OverflowError", "OutOfBoundsDatetime", "InvalidOperation")
DATA_ERROR_TEXTS = ("zoneinfo module or pytz", "is out of range")
# PyArrow's C importer gives an empty view array at an offset a views buffer of 0 bytes, which its own full
# validation then refuses: so for every arrowdev column of one, received or not (tests/test_serialize.py skips it)
PYARROW_EMPTY_VIEWS = "View buffer size (bytes): 0 isn't large enough for length: 0"


@dataclass
class Case:
    seed: int
    log: list = field(default_factory=list)


def run_case(seed: int) -> tuple[str, Case]:
    """Runs one case in this process: (outcome, case), the outcome as the module docstring says."""
    r = random.Random(seed)
    case = Case(seed)
    sent = fuzz_wrap.make_sent(r, case.log)
    mutated = fuzz_mutate.mutate(r, sent, case.log)
    if os.environ.get("ARROWDEV_FUZZ_VERBOSE"):
        print(" | ".join(case.log), file=sys.stderr, flush=True)
    arena = Arena()
    try:
        outcome = _receive_and_use(r, sent, mutated, arena)
    finally:
        import gc

        gc.collect()  # what holds the frames goes before they are unmapped
        arena.release()
    return outcome, case


def _receive_and_use(r: random.Random, sent: fuzz_wrap.Sent, mutated: bool, arena: Arena) -> str:
    import arrowdev as ad

    try:
        got = fuzz_wrap.deliver(r, sent, arena)
    except ad.InvalidArrowError as e:
        return f"refused: {str(e)[:200]}"
    except Exception as e:
        return f"REFUSED-OTHER ({type(e).__name__}): {str(e)[:200]}"
    try:
        return _use(got, sent, mutated)
    except Exception as e:  # a clear Python error after receipt: data no converter takes, or a failure
        text = f"({type(e).__name__}): {str(e)[:200]}"
        if type(e).__name__ in DATA_ERRORS or any(mark in str(e) for mark in DATA_ERROR_TEXTS):
            return f"error after receipt {text}"
        if type(e).__name__ in ("KeyError", "NotImplementedError") and "month_interval" in _type_text(got):
            return f"error after receipt (PyArrow converts no interval[months]) {text}"
        return f"ERROR-AFTER-RECEIPT {text}"


def _use(got: Any, sent: fuzz_wrap.Sent, mutated: bool) -> str:
    """Uses a received column or table as a user would; what happened."""
    import pickle

    import arrowdev as ad
    import arrowdev.dask as add

    len(got), got.device, str(got)[:100]
    if isinstance(got, ad.ArrowColumn):
        got.null_count, got.buffers
    try:
        got.validate(full=True) if isinstance(got, ad.ArrowColumn) else [c.validate(full=True) for c in got.columns]
    except ad.InvalidArrowError as e:
        text = str(e)
        if any(mark in text.lower() for mark in DATA_LEVEL):
            return f"data: {text[:200]}"
        if len(got) == 0 and PYARROW_EMPTY_VIEWS in text:
            return f"quirk: {text[:200]}"
        return f"INVALID: accepted, then full validation refused it: {text[:300]}"
    as_pyarrow = got.to_pyarrow()
    as_pyarrow.to_pylist() if isinstance(as_pyarrow, pa.ChunkedArray) else as_pyarrow.to_pydict()
    got.to_pylist()
    sliced = got.slice(len(got) // 2)
    sliced.to_pyarrow()
    add.nbytes(got), add.nbytes(sliced)
    again = pickle.loads(pickle.dumps(got, protocol=5))  # sent on, received again
    if not _same(again.to_pyarrow(), as_pyarrow):
        return "WRONG: what was sent on came back different"
    pickle.loads(pickle.dumps(sliced, protocol=5)).to_pyarrow()
    if not mutated and not _same(as_pyarrow, sent.original):
        return "WRONG: unmutated frames came back with other values"
    return "accepted"


def _type_text(got: Any) -> str:
    return str(getattr(got, "schema", None) or got.type)


def _same(a: Any, b: Any) -> bool:
    """Equal values, NaN equal to NaN (a flipped float byte makes one)."""
    return a.equals(b) or repr(a.to_pylist() if hasattr(a, "to_pylist") else a.to_pydict()) == repr(
        b.to_pylist() if hasattr(b, "to_pylist") else b.to_pydict())


if __name__ == "__main__":  # python3 -m tests.support.fuzz_frames SEED: one case, here, with its story
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parents[1]))
    outcome, case = run_case(int(sys.argv[1]))
    print(" | ".join(case.log))
    print(outcome)
