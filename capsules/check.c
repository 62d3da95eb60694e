/* Checks a held array tree against its schema, node by node, before Python sees it (C9, docs/architecture.md).
 *
 * Only the shape is checked here: how many buffers and children a node of each format has, that
 * dictionaries appear where the schema has them, that null_count <= length, and that the children
 * of struct, sparse union and fixed_size_list nodes cover their parent's rows. No buffer is read,
 * so device arrays are checked too. Format strings themselves are parsed and validated by nanoarrow
 * in Python; an unknown format here is reported, not guessed. Offsets that run past their data
 * need the data: ArrowColumn.validate(full=True) checks those.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "path_error.h"

typedef struct Layout {
  int64_t min_buffers, max_buffers; /* max_buffers -1: no upper bound (variadic view buffers) */
  int64_t children;                 /* -1: as many as the schema has */
} Layout;

static int starts(const char* s, const char* prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* The layout of a node of format f (for a dictionary, f is the index format). */
static int format_layout(const char* f, Layout* out) {
  static const Layout kNull = {0, 1, 0}, kFixed = {2, 2, 0}, kBytes = {3, 3, 0}, kViews = {3, -1, 0},
                      kList = {2, 2, 1}, kListView = {3, 3, 1}, kFixedList = {1, 1, 1},
                      kStruct = {1, 1, -1}, kSparse = {1, 1, -1}, kDense = {2, 2, -1}, kRunEnd = {0, 0, 2};
  if (f[0] != '\0' && f[1] == '\0') { /* one character: the commonest formats, decided at once */
    if (f[0] == 'n') *out = kNull;    /* one NULL buffer tolerated: Polars exports null arrays so */
    else if (strchr("bcCsSiIlLefg", f[0])) *out = kFixed;
    else if (strchr("zZuU", f[0])) *out = kBytes;
    else if (f[0] == 't') *out = kFixed; /* as the prefix rule below says */
    else return -1;
  }
  else if (strcmp(f, "vz") == 0 || strcmp(f, "vu") == 0) *out = kViews;
  else if (starts(f, "d:") || starts(f, "w:") || f[0] == 't') *out = kFixed;
  else if (strcmp(f, "+l") == 0 || strcmp(f, "+L") == 0 || strcmp(f, "+m") == 0) *out = kList;
  else if (strcmp(f, "+vl") == 0 || strcmp(f, "+vL") == 0) *out = kListView;
  else if (starts(f, "+w:")) *out = kFixedList;
  else if (strcmp(f, "+s") == 0) *out = kStruct;
  else if (starts(f, "+us:")) *out = kSparse;
  else if (starts(f, "+ud:")) *out = kDense;
  else if (strcmp(f, "+r") == 0) *out = kRunEnd;
  else return -1;
  return 0;
}

/* Rows a child must have for its parent's rows [0, offset + length), or -1 for no such rule. */
static int64_t child_rows_needed(const struct ArrowArray* a, const char* f) {
  if (f[0] != '+') return -1; /* only nested formats have the rule */
  if (strcmp(f, "+s") == 0 || starts(f, "+us:")) return a->offset + a->length;
  if (starts(f, "+w:")) return (a->offset + a->length) * strtoll(f + 3, NULL, 10);
  return -1;
}

static int check_node(const struct ArrowArray* a, const struct ArrowSchema* s, NodePath* path, char* err,
                      size_t err_len) {
#define FAIL(...) return path_error(err, err_len, path, __VA_ARGS__)
  if (s == NULL || s->format == NULL) FAIL("the schema has no node here");
  Layout layout;
  if (format_layout(s->format, &layout) != 0) FAIL("unknown format string '%s'", s->format);
  const char* f = s->format;
  if (a->n_buffers < layout.min_buffers || (layout.max_buffers >= 0 && a->n_buffers > layout.max_buffers)) {
    if (layout.max_buffers < 0) FAIL("a '%s' array needs at least %lld buffers, got %lld", f, (long long)layout.min_buffers, (long long)a->n_buffers);
    FAIL("a '%s' array has %lld buffers, got %lld", f, (long long)layout.min_buffers, (long long)a->n_buffers);
  }
  if (layout.children >= 0 && s->n_children != layout.children) {
    FAIL("a '%s' schema has %lld children, got %lld", f, (long long)layout.children, (long long)s->n_children);
  }
  if (a->n_children != s->n_children) {
    FAIL("a '%s' array has %lld children, got %lld", f, (long long)s->n_children, (long long)a->n_children);
  }
  if ((a->dictionary == NULL) != (s->dictionary == NULL)) {
    if (s->dictionary != NULL) FAIL("a dictionary-encoded '%s' array needs a dictionary, got none", f);
    FAIL("a '%s' array has no dictionary, got one", f);
  }
  if (a->null_count > a->length) FAIL("null_count %lld exceeds length %lld", (long long)a->null_count, (long long)a->length);
  int64_t need = child_rows_needed(a, f);
  int rc = 0;
  path->depth++;
  for (int64_t i = 0; i < a->n_children && rc == 0; i++) {
    path->steps[path->depth - 1] = i;
    if (need >= 0 && a->children[i]->length < need) {
      rc = path_error(err, err_len, path, "a child of a '%s' array needs length >= %lld, got %lld", f,
                      (long long)need, (long long)a->children[i]->length);
    } else {
      rc = check_node(a->children[i], s->children[i], path, err, err_len);
    }
  }
  if (rc == 0 && a->dictionary != NULL) {
    path->steps[path->depth - 1] = -1;
    rc = check_node(a->dictionary, s->dictionary, path, err, err_len);
  }
  path->depth--;
  return rc;
#undef FAIL
}

int check_against_schema(const struct ArrowArray* array, const struct ArrowSchema* schema, char* err,
                         size_t err_len) {
  NodePath path;
  path.depth = 0;
  return check_node(array, schema, &path, err, err_len);
}
