"""String operations that parse numbers (``int(s)``, ``float(s)``) or make strings of them (``str(n)``), and
the helpers they use: plain Python over a few intrinsics, compiled inside the UDF that uses them exactly as
:mod:`.operations` is (its ``bind`` gives these functions the same per-target namespace, where the names
they read but do not define are bound: see ``operations.BOUND``).
"""

from __future__ import annotations


def _digit(code):
    """Decimal value of a Unicode decimal digit (they come in runs of ten from 0), or -1."""
    if 48 <= code <= 57:
        return code - 48
    low, high = 0, len(DECIMAL) // 2 - 1
    while low <= high:
        middle = (low + high) // 2
        if code < DECIMAL[2 * middle]:
            high = middle - 1
        elif code > DECIMAL[2 * middle + 1]:
            low = middle + 1
        else:
            return (code - DECIMAL[2 * middle]) % 10
    return -1


def _skip_space(s, at):
    while at < size_of(s) and in_ranges(code_point_at(s, at), SPACE):
        at += _width_of(byte_at(s, at))
    return at


def _skip_space_back(s, end):
    while end > 0:
        last = _previous(s, end)
        if not in_ranges(code_point_at(s, last), SPACE):
            break
        end = last
    return end


def _ascii_lower(code):
    return code + 32 if 65 <= code <= 90 else code


def from_int(value):
    """``str(value)`` of an integer. Digits are taken from the value made non-positive, so the
    minimum int64 needs no special case."""
    negative = value < 0
    rest = value if negative else -value
    digits, probe = 1, -(rest // -10)
    while probe != 0:
        digits += 1
        probe = -(probe // -10)
    size = digits + (1 if negative else 0)
    out = new_string(size)
    w = view_of(out)
    pos = size - 1
    for _ in range(digits):
        set_byte(w, pos, 48 - rest % -10)
        rest = -(rest // -10)
        pos -= 1
    if negative:
        set_byte(w, 0, 45)
    return out


def to_int(s):
    return _to_int(view_of(s))


def _to_int(s):
    """``int(s)``: surrounding whitespace, a sign, decimal digits (any script) with single underscores
    between them; a failure, or a value beyond int64, fails the row. The magnitude is accumulated
    negated, so the minimum int64 fits."""
    at, end = _skip_space(s, 0), _skip_space_back(s, size_of(s))
    negative = False
    if at < end and (byte_at(s, at) == 43 or byte_at(s, at) == 45):
        negative = byte_at(s, at) == 45
        at += 1
    negated, digits, underscore = 0, 0, False
    while at < end:
        code = code_point_at(s, at)
        if code == 95 and digits > 0 and not underscore:
            underscore = True
        else:
            digit = _digit(code)
            if digit < 0 or negated < -922337203685477580 or (negated == -922337203685477580 and digit > 8):
                fail_row()
                return 0
            negated = negated * 10 - digit
            digits += 1
            underscore = False
        at += _width_of(byte_at(s, at))
    if digits == 0 or underscore or (not negative and negated == -9223372036854775807 - 1):
        fail_row()
        return 0
    return negated if negative else -negated


def to_float(s):
    return _to_float(view_of(s))


def _to_float(s):
    """``float(s)``: whitespace, a sign, ``inf`` / ``infinity`` / ``nan`` in any case, or digits (any
    script, single underscores between them) with an optional fraction and exponent."""
    at, end = _skip_space(s, 0), _skip_space_back(s, size_of(s))
    sign = 1.0
    if at < end and (byte_at(s, at) == 43 or byte_at(s, at) == 45):
        sign = -1.0 if byte_at(s, at) == 45 else 1.0
        at += 1
    word = end - at
    if word == 3 or word == 8:
        letters = 0
        for k in range(word):
            letters = letters * 128 + _ascii_lower(byte_at(s, at + k))
        if (word == 3 and letters == _INF) or (word == 8 and letters == _INFINITY):
            return sign * np.inf
        if word == 3 and letters == _NAN:
            return np.nan
    significand, significant, exponent, digits, truncated = 0, 0, 0, 0, False
    seen_point, underscore, previous_digit = False, False, False
    while at < end:
        code = code_point_at(s, at)
        digit = _digit(code)
        if digit >= 0:
            if significant < 18:  # 18 digits always fit an int64
                if significand != 0 or digit != 0:
                    significant += 1
                significand = significand * 10 + digit
                if seen_point:
                    exponent -= 1
            else:
                truncated = truncated or digit != 0
                if not seen_point:
                    exponent += 1
            digits += 1
            underscore, previous_digit = False, True
        elif code == 95 and previous_digit:
            underscore, previous_digit = True, False
        elif code == 46 and not seen_point and not underscore:
            seen_point, previous_digit = True, False
        else:
            break
        at += _width_of(byte_at(s, at))
    if digits == 0 or underscore:
        fail_row()
        return 0.0
    if at < end:
        if byte_at(s, at) != 101 and byte_at(s, at) != 69:
            fail_row()
            return 0.0
        at += 1
        exponent_sign = 1
        if at < end and (byte_at(s, at) == 43 or byte_at(s, at) == 45):
            exponent_sign = -1 if byte_at(s, at) == 45 else 1
            at += 1
        written, exponent_digits, underscore, previous_digit = 0, 0, False, False
        while at < end:
            code = code_point_at(s, at)
            digit = _digit(code)
            if digit >= 0:
                if written < 100000:
                    written = written * 10 + digit
                exponent_digits += 1
                underscore, previous_digit = False, True
            elif code == 95 and previous_digit:
                underscore, previous_digit = True, False
            else:
                fail_row()
                return 0.0
            at += _width_of(byte_at(s, at))
        if exponent_digits == 0 or underscore:
            fail_row()
            return 0.0
        exponent += exponent_sign * written
    if truncated:  # digits past the 18th count as a half: the value lies strictly inside (w, w + 1) * 10**e
        return sign * _scaled(2 * significand + 1, exponent, 0.5)
    return sign * _scaled(significand, exponent, 1.0)


def _word(text):
    """ASCII ``text`` (up to 9 letters) as one integer, 7 bits per letter, for comparisons in one step."""
    value = 0
    for letter in text:
        value = value * 128 + ord(letter)
    return value


_INF, _NAN, _INFINITY = _word("inf"), _word("nan"), _word("infinity")


def _scaled(significand, exponent, factor):
    """significand * 10**exponent * factor (1 or 0.5) rounded to the nearest double (significand <
    2 * 10**18). Powers of ten are double-double pairs (``POW10``, within 2**-106); the product is formed
    with a fused multiply-add, so the result is correctly rounded unless the exact value lies within about
    2**-100 of a halfway point. Subnormal results are rounded once, in units of the smallest subnormal."""
    if significand == 0 or exponent < -342:
        return 0.0
    if exponent > 308:
        return np.inf
    row = 2 * (exponent + 342)
    scale = 2.0 ** -600 if exponent < -290 else (2.0 ** 600 if exponent > 290 else 1.0)  # see POW10
    if significand < 9007199254740992 and -22 <= exponent <= 22:  # both exact: one rounding
        if exponent >= 0:
            return float(significand) * POW10[row] * factor
        return float(significand) / POW10[2 * (342 - exponent)] * factor
    high, low = POW10[row], POW10[row + 1]
    w_high = float(significand)
    w_low = float(significand - int(w_high))
    product = w_high * high
    error = fused_multiply_add(w_high, high, -product) + (w_high * low + w_low * high)
    value = (product + error) * (scale * factor)
    if scale < 1.0 and value <= 2.2250738585072014e-308:  # subnormal (or rounded up to the smallest normal)
        return _subnormal(product * (2.0 ** 474 * factor), error * (2.0 ** 474 * factor))
    return value


def _subnormal(units, rest):
    """(units + rest) * 2**-1074 rounded once to the nearest multiple of 2**-1074 (ties to even), where
    units + rest is a double-double count of the smallest subnormal (the sum is compared with the half
    without being rounded)."""
    whole, shift = math.floor(units) * 1.0, math.floor(rest) * 1.0
    fraction, rest = units - whole, rest - shift  # both exact, in [0, 1)
    whole += shift
    if rest >= 1.0 - fraction:  # the two fractions make a whole unit
        whole += 1.0
        rest -= 1.0 - fraction
        fraction = 0.0
    if fraction > 0.5:
        above, tie = fraction - 0.5 > -rest, fraction - 0.5 == -rest
    elif fraction < 0.5:
        above, tie = rest > 0.5 - fraction, rest == 0.5 - fraction
    else:
        above, tie = rest > 0.0, rest == 0.0
    up = above or (tie and whole % 2.0 == 1.0)
    return (whole + (1.0 if up else 0.0)) * 5e-324
