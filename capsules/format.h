/* Arrow C format strings, parsed: what layout a node of each format has. See format.c. */
#ifndef ARROWDEV_CAPSULES_FORMAT_H
#define ARROWDEV_CAPSULES_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/* The physical layouts of the Arrow columnar format (a dictionary-encoded node has its index's). */
typedef enum LayoutKind {
  kLayoutNull,       /* n: no buffers */
  kLayoutFixed,      /* validity, data of `bits` per element (booleans: 1) */
  kLayoutBytes,      /* validity, offsets of `bits`, data: string / binary and their large forms */
  kLayoutViews,      /* validity, views, variadic data buffers..., their sizes: string_view / binary_view */
  kLayoutList,       /* validity, offsets of `bits`; one child. Maps too (child: struct of two) */
  kLayoutListView,   /* validity, offsets and sizes of `bits`; one child */
  kLayoutFixedList,  /* validity; one child of fixed_size rows per row */
  kLayoutStruct,     /* validity; any children */
  kLayoutSparse,     /* type ids; one child per type id */
  kLayoutDense,      /* type ids, int32 offsets; one child per type id */
  kLayoutRunEnd,     /* no buffers; run ends and values */
} LayoutKind;

typedef struct FormatInfo {
  LayoutKind kind;
  int64_t bits;       /* element bits (fixed), offset bits (bytes, lists, list views); else 0 */
  int64_t fixed_size; /* fixed_size_binary bytes, fixed_size_list rows per row; else 0 */
  int64_t children;   /* children a node needs (unions: one per type id), or -1 for any (struct) */
  int is_map;         /* +m: its child must be a struct of two (keys, values) */
  int is_integer;     /* may index a dictionary, or be run ends (16, 32 or 64 bits, signed) */
  int is_signed;
} FormatInfo;

/* Parses format f (the whole string: trailing characters are an error). 0 with *out filled, or
 * -1 with a reason in err ("unknown format string 'x'", ...). */
int format_parse(const char* f, FormatInfo* out, char* err, size_t err_len);

/* 1 when the n bytes at s are valid UTF-8 (no overlong forms, no surrogates), else 0. */
int utf8_valid(const char* s, size_t n);

#endif /* ARROWDEV_CAPSULES_FORMAT_H */
