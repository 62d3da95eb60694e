"""The Unicode tables of the running Python's Unicode version (``unicodedata.unidata_version``),
chosen at import from :mod:`.unicode_data`: string predicates and case maps in compiled code agree with
this Python's ``str``.

>>> import unicodedata
>>> UNICODE_VERSION == unicodedata.unidata_version
True
"""

from __future__ import annotations

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


def _index(mapping: tuple) -> tuple:
    """A direct index of a (code, m1, m2, m3) case map by code point, so a lookup is two loads, not a
    search: ``index[0]`` is the number of blocks of 128 code points up to the last mapped one;
    ``index[1 + b]`` is -1 for a block without mappings (most of them), else where its 128 slots start in
    this same tuple; a slot holds the row of its code point in ``mapping``, or -1.

    >>> index = _index((0xE9, 0xC9, 0, 0, 0x101, 0x100, 0, 0))  # é -> É, ā -> Ā
    >>> blocks, row_of_e_acute, row_of_a_macron = index[0], index[index[1 + 1] + 0x69], index[index[1 + 2] + 0x01]
    >>> blocks, index[1 + 0], row_of_e_acute, row_of_a_macron, index[index[1 + 1] + 0x6A]
    (3, -1, 0, 1, -1)
    """
    codes = mapping[0::4]
    blocks = (codes[-1] >> BLOCK_BITS) + 1
    starts, slots = [-1] * blocks, []
    for row, code in enumerate(codes):
        block = code >> BLOCK_BITS
        if starts[block] < 0:
            starts[block] = 1 + blocks + len(slots)
            slots.extend([-1] * (1 << BLOCK_BITS))
        slots[starts[block] - 1 - blocks + (code & ((1 << BLOCK_BITS) - 1))] = row
    return (blocks, *starts, *slots)


UPPER_INDEX = _index(UPPER_MAP)
LOWER_INDEX = _index(LOWER_MAP)
TITLE_INDEX = _index(TITLE_MAP)
