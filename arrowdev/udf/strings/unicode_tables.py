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
