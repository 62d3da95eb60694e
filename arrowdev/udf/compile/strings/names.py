"""The read-only string operations by name: what ``typing`` declares and ``lowering`` implements, kept here
so that typing never imports lowering (numba-cuda's split: ``*decl`` apart from ``*impl``)."""

from __future__ import annotations

import operator

__all__ = ["COMPARISONS", "METHODS", "PREDICATES"]

COMPARISONS = {operator.eq: "eq", operator.ne: "ne", operator.lt: "lt", operator.le: "le", operator.gt: "gt",
               operator.ge: "ge"}
METHODS = ("startswith", "endswith", "find", "rfind", "count")
PREDICATES = ("isalpha", "isalnum", "isdecimal", "isdigit", "isnumeric", "isspace", "isupper", "islower", "istitle")
