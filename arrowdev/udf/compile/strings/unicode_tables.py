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


# A slot of an index: the row (bits 0-19), the mapping's UTF-8 size (bits 20-23), its single code point
# (bits 32-52). operations.py reads slots with these names.
ROW_MASK = (1 << 20) - 1
SIZE_SHIFT, SIZE_MASK = 20, 15
SINGLE_SHIFT = 32


def _slot(row: int, mapped: tuple) -> int:
    """An index slot: ``row``, the UTF-8 size of the whole mapping and, where the mapping is a single code
    point (almost all), that code point (0 otherwise): the size pass and the common case of the writing
    pass never read the mapping's row."""
    codes = [c for c in mapped if c]
    single = codes[0] if len(codes) == 1 else 0
    size = len("".join(map(chr, codes)).encode())
    return row | (size << SIZE_SHIFT) | (single << SINGLE_SHIFT)


def _index(mapping: tuple) -> tuple:
    """A direct index of a (code, m1, m2, m3) case map by code point, so a lookup is two loads, not a
    search: ``index[0]`` is the number of blocks of 128 code points up to the last mapped one;
    ``index[1 + b]`` is -1 for a block without mappings (most of them), else where its 128 slots start in
    this same tuple; a slot holds the row of its code point in ``mapping`` with the mapping's size and
    single code point (``_slot``), or -1.

    >>> index = _index((0xE9, 0xC9, 0, 0, 0xDF, 0x53, 0x53, 0))  # é -> É, ß -> SS
    >>> blocks, e_acute, sharp_s = index[0], index[index[1 + 1] + 0x69], index[index[1 + 1] + 0x5F]
    >>> blocks, index[1 + 0], e_acute & 0xFFFFF, (e_acute >> 20) & 15, hex(e_acute >> 32), index[index[1 + 1] + 0x6A]
    (2, -1, 0, 2, '0xc9', -1)
    >>> sharp_s & 0xFFFFF, (sharp_s >> 20) & 15, sharp_s >> 32
    (1, 2, 0)
    """
    codes = mapping[0::4]
    blocks = (max(codes) >> BLOCK_BITS) + 1
    starts, slots = [-1] * blocks, []
    for row, code in enumerate(codes):
        block = code >> BLOCK_BITS
        if starts[block] < 0:
            starts[block] = 1 + blocks + len(slots)
            slots.extend([-1] * (1 << BLOCK_BITS))
        slots[starts[block] - 1 - blocks + (code & ((1 << BLOCK_BITS) - 1))] = _slot(row, mapping[4 * row + 1:4 * row + 4])
    assert len(codes) <= ROW_MASK
    return (blocks, *starts, *slots)


UPPER_INDEX = _index(UPPER_MAP)
LOWER_INDEX = _index(LOWER_MAP)
TITLE_INDEX = _index(TITLE_MAP)
