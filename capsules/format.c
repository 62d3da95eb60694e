/* Arrow C format strings (https://arrow.apache.org/docs/format/CDataInterface.html#data-type-description-format-strings),
 * parsed in full, so that a check of a producer's tree (check.c) knows every node's layout before
 * anything reads it. nanoarrow parses the same strings again when arrowdev makes a DataType
 * (arrowdev/types.py); this parser is the one that runs before any other code sees the tree.
 */
#include <stdio.h>
#include <string.h>

#include "format.h"

static int starts(const char* s, const char* prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* A decimal integer at *p (optionally signed), advancing *p; -1 when there are no digits or it
 * does not fit below 2^31 (every number in a format string is a 32-bit one). */
static int parse_int(const char** p, int allow_sign, int64_t* out) {
  const char* s = *p;
  int negative = 0;
  if (allow_sign && (*s == '-' || *s == '+')) negative = *s++ == '-';
  if (*s < '0' || *s > '9') return -1;
  int64_t value = 0;
  for (; *s >= '0' && *s <= '9'; s++) {
    value = value * 10 + (*s - '0');
    if (value > INT32_MAX) return -1;
  }
  *out = negative ? -value : value;
  *p = s;
  return 0;
}

/* One-character formats: nulls, booleans, integers, floats, strings and binaries. */
static int parse_primitive(char c, FormatInfo* out) {
  static const char kIntegers[] = "cCsSiIlL";
  const char* integer = c != '\0' ? strchr(kIntegers, c) : NULL;
  if (integer != NULL) {
    out->kind = kLayoutFixed;
    out->bits = 8 << ((integer - kIntegers) / 2);
    out->is_integer = 1;
    out->is_signed = (integer - kIntegers) % 2 == 0;
    return 0;
  }
  switch (c) {
    case 'n': out->kind = kLayoutNull; return 0;
    case 'b': out->kind = kLayoutFixed; out->bits = 1; return 0;
    case 'e': out->kind = kLayoutFixed; out->bits = 16; return 0;
    case 'f': out->kind = kLayoutFixed; out->bits = 32; return 0;
    case 'g': out->kind = kLayoutFixed; out->bits = 64; return 0;
    case 'z': case 'u': out->kind = kLayoutBytes; out->bits = 32; return 0;
    case 'Z': case 'U': out->kind = kLayoutBytes; out->bits = 64; return 0;
    default: return -1;
  }
}

/* Temporal formats: t then a unit letter or two (and a time zone for timestamps). */
static int parse_temporal(const char* f, FormatInfo* out) {
  static const struct { const char* format; int bits; } kExact[] = {
      {"tdD", 32}, {"tdm", 64}, {"tts", 32}, {"ttm", 32}, {"ttu", 64}, {"ttn", 64}, {"tDs", 64},
      {"tDm", 64}, {"tDu", 64}, {"tDn", 64}, {"tiM", 32}, {"tiD", 64}, {"tin", 128}};
  out->kind = kLayoutFixed;
  for (size_t i = 0; i < sizeof kExact / sizeof kExact[0]; i++) {
    if (strcmp(f, kExact[i].format) == 0) {
      out->bits = kExact[i].bits;
      return 0;
    }
  }
  /* timestamps: tss: tsm: tsu: tsn:, then a time zone (may be empty) */
  if (f[1] == 's' && f[2] != '\0' && strchr("smun", f[2]) != NULL && f[3] == ':') {
    out->bits = 64;
    return 0;
  }
  return -1;
}

/* d:precision,scale[,bitwidth] */
static int parse_decimal(const char* f, FormatInfo* out) {
  const char* p = f + 2;
  int64_t precision, scale, bits = 128;
  if (parse_int(&p, 0, &precision) || precision < 1 || *p++ != ',' || parse_int(&p, 1, &scale)) return -1;
  if (*p == ',') {
    p++;
    if (parse_int(&p, 0, &bits) || (bits != 32 && bits != 64 && bits != 128 && bits != 256)) return -1;
  }
  if (*p != '\0') return -1;
  out->kind = kLayoutFixed;
  out->bits = bits;
  return 0;
}

/* A size after a prefix ("w:", "+w:"): the whole rest of the string. */
static int parse_size(const char* s, int64_t* out) { return parse_int(&s, 0, out) || *s != '\0' ? -1 : 0; }

/* +ud:ids / +us:ids, ids a comma-separated list of type ids 0..127 (maybe empty). */
static int parse_union(const char* f, FormatInfo* out) {
  out->kind = f[2] == 'd' ? kLayoutDense : kLayoutSparse;
  out->children = 0;
  const char* p = f + 4;
  if (*p == '\0') return 0;
  for (;;) {
    int64_t id;
    if (parse_int(&p, 0, &id) || id > 127) return -1;
    out->children++;
    if (*p == '\0') return 0;
    if (*p++ != ',') return -1;
  }
}

static int parse_nested(const char* f, FormatInfo* out) {
  out->children = 1;
  if (strcmp(f, "+l") == 0 || strcmp(f, "+L") == 0 || strcmp(f, "+m") == 0) {
    out->kind = kLayoutList;
    out->bits = f[1] == 'L' ? 64 : 32;
    out->is_map = f[1] == 'm';
  } else if (strcmp(f, "+vl") == 0 || strcmp(f, "+vL") == 0) {
    out->kind = kLayoutListView;
    out->bits = f[2] == 'L' ? 64 : 32;
  } else if (starts(f, "+w:")) {
    out->kind = kLayoutFixedList;
    if (parse_size(f + 3, &out->fixed_size)) return -1;
  } else if (strcmp(f, "+s") == 0) {
    out->kind = kLayoutStruct;
    out->children = -1;
  } else if (strcmp(f, "+r") == 0) {
    out->kind = kLayoutRunEnd;
    out->children = 2;
  } else if (starts(f, "+ud:") || starts(f, "+us:")) {
    return parse_union(f, out);
  } else {
    return -1;
  }
  return 0;
}

int format_parse(const char* f, FormatInfo* out, char* err, size_t err_len) {
  memset(out, 0, sizeof *out);
  int rc;
  if (f[0] != '\0' && f[1] == '\0') rc = parse_primitive(f[0], out);
  else if (strcmp(f, "vz") == 0 || strcmp(f, "vu") == 0) {
    out->kind = kLayoutViews;
    rc = 0;
  } else if (starts(f, "w:")) {
    out->kind = kLayoutFixed;
    rc = parse_size(f + 2, &out->fixed_size);
    out->bits = 8 * out->fixed_size;
  } else if (starts(f, "d:")) rc = parse_decimal(f, out);
  else if (f[0] == 't') rc = parse_temporal(f, out);
  else if (f[0] == '+') rc = parse_nested(f, out);
  else rc = -1;
  if (rc != 0) snprintf(err, err_len, "unknown format string '%.100s'", f);
  return rc;
}

int utf8_valid(const char* s, size_t n) {
  const unsigned char* p = (const unsigned char*)s;
  size_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    size_t extra;
    uint32_t cp;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xE0) == 0xC0) extra = 1, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) extra = 2, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) extra = 3, cp = c & 0x07;
    else return 0;
    if (i + extra >= n) return 0; /* cut short */
    for (size_t k = 1; k <= extra; k++) {
      if ((p[i + k] & 0xC0) != 0x80) return 0;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    static const uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[extra] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    i += extra + 1;
  }
  return 1;
}
