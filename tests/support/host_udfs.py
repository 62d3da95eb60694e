"""UDFs the host tests share (tests/test_host_polars.py, test_host_duckdb.py, test_host_pandas.py): one
definition each, so a test process compiles each once per input types whatever host runs it."""

from __future__ import annotations

import arrowdev as ad


def piecewise(x):
    return x * 2 + 1 if x > 0.5 else x - 1


def weighted(a, b):
    return a * b if a > 0 else b


def shout(s):
    return s.upper() + "!"


def or_minus_one(x):
    return -1.0 if x is ad.NA else x
