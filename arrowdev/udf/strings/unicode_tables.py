"""The Unicode tables of the running Python's Unicode version (``unicodedata.unidata_version``),
chosen at import from :mod:`.unicode_data`: string predicates and case maps in compiled code agree with
this Python's ``str``.

>>> import unicodedata
>>> UNICODE_VERSION == unicodedata.unidata_version
True
"""

from __future__ import annotations

from bisect import bisect_left

from .unicode_data import load

_TABLES = load()

GENERATOR_VERSION = _TABLES["GENERATOR_VERSION"]
PYTHON_VERSION = _TABLES["PYTHON_VERSION"]  # of the Python that generated them
UNICODE_VERSION = _TABLES["UNICODE_VERSION"]
ALPHA = _TABLES["ALPHA"]
ALNUM = _TABLES["ALNUM"]
DECIMAL = _TABLES["DECIMAL"]
DIGIT = _TABLES["DIGIT"]
NUMERIC = _TABLES["NUMERIC"]
SPACE = _TABLES["SPACE"]
UPPER = _TABLES["UPPER"]
LOWER = _TABLES["LOWER"]
TITLE = _TABLES["TITLE"]
CASED = _TABLES["CASED"]
CASE_IGNORABLE = _TABLES["CASE_IGNORABLE"]
UPPER_MAP = _TABLES["UPPER_MAP"]
LOWER_MAP = _TABLES["LOWER_MAP"]
TITLE_MAP = _TABLES["TITLE_MAP"]

BLOCK_BITS = 7  # case-map rows are indexed by blocks of 128 code points


def _blocks(mapping: tuple) -> tuple:
    """Row of the first entry of each block of 128 code points in a (code, m1, m2, m3) case map, one
    more past the last block: block b's rows are ``blocks[b] .. blocks[b + 1] - 1`` (none when equal), so
    a lookup searches a few rows, and a character of a block without mappings (most of them) none."""
    codes = mapping[0::4]
    return tuple(bisect_left(codes, block << BLOCK_BITS) for block in range((codes[-1] >> BLOCK_BITS) + 2))


UPPER_BLOCKS = _blocks(UPPER_MAP)
LOWER_BLOCKS = _blocks(LOWER_MAP)
TITLE_BLOCKS = _blocks(TITLE_MAP)
