/* Checks of a producer's trees, node by node, before anyone (arrowdev, nanoarrow, PyArrow, a UDF)
 * reads them (design.md O7). What a consumer can check without trusting the producer is checked
 * here; what it cannot (a buffer shorter than the length claims, a pointer into nowhere) is
 * listed in docs/validation.md.
 *
 * Every walk keeps a set of the nodes it has seen (path_error.h): a node met twice (children
 * sharing one struct, or a cycle) is refused when first met again, so a check takes time linear
 * in the tree's distinct nodes, and the walks after it (copies, keys, exports) take time linear
 * in the checked tree. Buffers are never read, except the two sizes PyArrow's importer reads
 * from CPU memory too (check_against_schema), so device arrays are checked the same way.
 */
#include <string.h>

#include "check.h"
#include "format.h"
#include "path_error.h"
#include "released.h"

static const int64_t kMaxCount = (int64_t)1 << 24; /* children or buffers per node */
static const size_t kMaxMetadataBytes = (size_t)1 << 31;

typedef struct Walk {
  NodePath path;
  NodeSet seen;
  char* err;
  size_t err_len;
} Walk;

#define FAIL(...) return path_error(w->err, w->err_len, &w->path, __VA_ARGS__)

/* The first checks of any node: present, not too deep, not seen before in this walk. */
static int enter_node(const void* node, const char* what, Walk* w) {
  if (node == NULL) FAIL("node pointer is NULL (expected an %s)", what);
  if (w->path.depth > kMaxDepth) FAIL("nested deeper than %d levels", kMaxDepth);
  int added = node_set_add(&w->seen, node);
  if (added < 0) FAIL("out of memory checking the tree");
  if (added == 0) FAIL("this %s struct appears twice in the tree (shared children or a cycle)", what);
  return 0;
}

static int counts_check(int64_t n_children, const void* children, Walk* w) {
  if (n_children < 0) FAIL("negative n_children %lld", (long long)n_children);
  if (n_children > kMaxCount) FAIL("n_children %lld is beyond the limit of %lld", (long long)n_children, (long long)kMaxCount);
  if (n_children > 0 && children == NULL) FAIL("n_children is %lld but children is NULL", (long long)n_children);
  return 0;
}

/* ---- schemas ------------------------------------------------------------------------------ */

/* The metadata encoding: int32 pair count, then per pair int32 length + key bytes, int32 length +
 * value bytes. Negative counts and lengths are refused, as PyArrow does. */
static int metadata_check(const char* m, Walk* w) {
  if (m == NULL) return 0;
  int32_t n, len;
  memcpy(&n, m, 4);
  if (n < 0) FAIL("Invalid encoded metadata string: negative pair count %d", (int)n);
  size_t pos = 4;
  for (int64_t i = 0; i < 2 * (int64_t)n; i++) {
    memcpy(&len, m + pos, 4);
    if (len < 0) {
      FAIL("Invalid encoded metadata string: the %s of pair %lld has negative length %d", i % 2 ? "value" : "key",
           (long long)(i / 2), (int)len);
    }
    pos += 4 + (size_t)len;
    if (pos > kMaxMetadataBytes) FAIL("Invalid encoded metadata string: longer than 2 GiB");
  }
  return 0;
}

static int schema_node(const struct ArrowSchema* s, Walk* w);

static int schema_children(const struct ArrowSchema* s, const FormatInfo* info, Walk* w) {
  NodePath* path = &w->path;
  path->depth++;
  for (int64_t i = 0; i < s->n_children; i++) {
    path->steps[path->depth - 1] = i;
    if (schema_node(s->children[i], w)) return -1;
  }
  if (s->dictionary != NULL) {
    path->steps[path->depth - 1] = -1;
    if (schema_node(s->dictionary, w)) return -1;
  }
  path->depth--;
  const struct ArrowSchema* first = s->n_children > 0 ? s->children[0] : NULL;
  if (info->is_map && (strcmp(first->format, "+s") != 0 || first->n_children != 2)) {
    FAIL("a map's child must be a struct of two children (keys, values), got '%s' with %lld", first->format,
         (long long)first->n_children);
  }
  if (info->kind == kLayoutRunEnd && s->dictionary == NULL) {
    FormatInfo ends;
    char why[160];
    if (format_parse(first->format, &ends, why, sizeof why) || !ends.is_integer || !ends.is_signed || ends.bits < 16) {
      FAIL("a run-end encoded array's run ends must be int16, int32 or int64, got '%s'", first->format);
    }
  }
  return 0;
}

static int schema_node(const struct ArrowSchema* s, Walk* w) {
  if (enter_node(s, "ArrowSchema", w)) return -1;
  if (ArrowSchemaIsReleased(s)) FAIL("the schema is released (release is NULL)");
  if (s->format == NULL) FAIL("format is NULL");
  if (!utf8_valid(s->format, strlen(s->format))) FAIL("the format string is not valid UTF-8");
  FormatInfo info;
  char why[160];
  if (format_parse(s->format, &info, why, sizeof why)) FAIL("%s", why);
  if (s->name != NULL && !utf8_valid(s->name, strlen(s->name))) FAIL("the name is not valid UTF-8");
  if (metadata_check(s->metadata, w) || counts_check(s->n_children, s->children, w)) return -1;
  if (s->dictionary != NULL && (info.children != 0 || !info.is_integer)) {
    FAIL("a dictionary-encoded node needs an integer index format, got '%s'", s->format);
  }
  if (info.children >= 0 && s->n_children != info.children) {
    FAIL("a '%s' schema has %lld children, got %lld", s->format, (long long)info.children, (long long)s->n_children);
  }
  return schema_children(s, &info, w);
}

int schema_check(const struct ArrowSchema* schema, char* err, size_t err_len) {
  Walk walk = {.err = err, .err_len = err_len};
  node_path_init(&walk.path, "schema");
  node_set_init(&walk.seen);
  int rc = schema_node(schema, &walk);
  node_set_free(&walk.seen);
  return rc;
}

/* ---- arrays, alone ------------------------------------------------------------------------ */

static int array_node(const struct ArrowArray* a, Walk* w) {
  if (enter_node(a, "ArrowArray", w)) return -1;
  if (ArrowArrayIsReleased(a)) FAIL("struct is released (release is NULL)");
  if (a->length < 0) FAIL("negative length %lld", (long long)a->length);
  if (a->offset < 0) FAIL("negative offset %lld", (long long)a->offset);
  if (a->offset > INT64_MAX - a->length) FAIL("offset + length overflows");
  if (a->null_count < -1) FAIL("null_count %lld is below -1", (long long)a->null_count);
  if (a->n_buffers < 0) FAIL("negative n_buffers %lld", (long long)a->n_buffers);
  if (a->n_buffers > kMaxCount) FAIL("n_buffers %lld is beyond the limit of %lld", (long long)a->n_buffers, (long long)kMaxCount);
  if (a->n_buffers > 0 && a->buffers == NULL) FAIL("n_buffers is %lld but buffers is NULL", (long long)a->n_buffers);
  if (counts_check(a->n_children, a->children, w)) return -1;
  NodePath* path = &w->path;
  path->depth++;
  for (int64_t i = 0; i < a->n_children; i++) {
    path->steps[path->depth - 1] = i;
    if (array_node(a->children[i], w)) return -1;
  }
  if (a->dictionary != NULL) {
    path->steps[path->depth - 1] = -1;
    if (array_node(a->dictionary, w)) return -1;
  }
  path->depth--;
  return 0;
}

int arrow_array_check(const struct ArrowArray* array, char* err, size_t err_len) {
  Walk walk = {.err = err, .err_len = err_len};
  node_path_init(&walk.path, "array");
  node_set_init(&walk.seen);
  int rc = array_node(array, &walk);
  node_set_free(&walk.seen);
  return rc;
}

int device_fields_check(const struct ArrowDeviceArray* array, char* err, size_t err_len) {
  switch (array->device_type) {
    case ARROW_DEVICE_CPU: case ARROW_DEVICE_CUDA: case ARROW_DEVICE_CUDA_HOST: case ARROW_DEVICE_OPENCL:
    case ARROW_DEVICE_VULKAN: case ARROW_DEVICE_METAL: case ARROW_DEVICE_VPI: case ARROW_DEVICE_ROCM:
    case ARROW_DEVICE_ROCM_HOST: case ARROW_DEVICE_EXT_DEV: case ARROW_DEVICE_CUDA_MANAGED:
    case ARROW_DEVICE_ONEAPI: case ARROW_DEVICE_WEBGPU: case ARROW_DEVICE_HEXAGON: break;
    default:
      snprintf(err, err_len, "array: unknown ArrowDeviceType %d", (int)array->device_type);
      return -1;
  }
  int needs_device = array->device_type == ARROW_DEVICE_CUDA || array->device_type == ARROW_DEVICE_ROCM ||
                     array->device_type == ARROW_DEVICE_CUDA_MANAGED;
  if (array->device_id < -1 || (needs_device && array->device_id < 0)) {
    snprintf(err, err_len, "array: device_id %lld does not name a device of type %d", (long long)array->device_id,
             (int)array->device_type);
    return -1;
  }
  return 0;
}

/* ---- arrays against their schema ---------------------------------------------------------- */

/* The buffer count of a node of this layout: [min, max] (max -1: no bound). */
static void buffer_counts(const FormatInfo* info, int64_t* min, int64_t* max) {
  static const int64_t kCounts[][2] = {
      [kLayoutNull] = {0, 1}, /* one NULL buffer tolerated: Polars exports null arrays so */
      [kLayoutFixed] = {2, 2},     [kLayoutBytes] = {3, 3}, [kLayoutViews] = {3, -1}, [kLayoutList] = {2, 2},
      [kLayoutListView] = {3, 3},  [kLayoutFixedList] = {1, 1}, [kLayoutStruct] = {1, 1},
      [kLayoutSparse] = {1, 1},    [kLayoutDense] = {2, 2},  [kLayoutRunEnd] = {0, 0}};
  *min = kCounts[info->kind][0];
  *max = kCounts[info->kind][1];
}

static int has_validity(LayoutKind kind) {
  return kind != kLayoutNull && kind != kLayoutSparse && kind != kLayoutDense && kind != kLayoutRunEnd;
}

#define NEED(i, what)                                                                                       \
  if (a->buffers[i] == NULL)                                                                                \
  FAIL("buffer %d (%s) is NULL, but a '%s' array with offset %lld and length %lld needs it", (int)(i), what, f, \
       (long long)a->offset, (long long)a->length)

/* Buffers present wherever the node's rows need them (PyArrow's importer refuses the same). */
static int buffers_check(const struct ArrowArray* a, const FormatInfo* info, const char* f, int readable, Walk* w) {
  int64_t end = a->offset + a->length;
  if (has_validity(info->kind) && a->null_count > 0 && a->buffers[0] == NULL) {
    FAIL("null_count is %lld but the validity buffer is NULL", (long long)a->null_count);
  }
  switch (info->kind) {
    case kLayoutFixed:
      if (end > 0 && info->bits > 0) NEED(1, "data");
      break;
    case kLayoutBytes:
      if (a->length == 0) break;
      NEED(1, "offsets");
      if (a->buffers[2] == NULL && readable) {
        int64_t last = info->bits == 32 ? ((const int32_t*)a->buffers[1])[end] : ((const int64_t*)a->buffers[1])[end];
        if (last != 0) FAIL("buffer 2 (data) is NULL, but the offsets say it holds %lld bytes", (long long)last);
      }
      break;
    case kLayoutViews:
      if (end > 0) NEED(1, "views");
      if (a->n_buffers > 3) NEED(a->n_buffers - 1, "variadic buffer sizes");
      for (int64_t k = 2; readable && k < a->n_buffers - 1; k++) {
        int64_t size = ((const int64_t*)a->buffers[a->n_buffers - 1])[k - 2];
        if (a->buffers[k] == NULL && size != 0) {
          FAIL("buffer %lld (variadic data) is NULL, but its size is %lld", (long long)k, (long long)size);
        }
      }
      break;
    case kLayoutList:
      if (a->length > 0) NEED(1, "offsets");
      break;
    case kLayoutListView:
      if (end > 0) NEED(1, "offsets");
      if (end > 0) NEED(2, "sizes");
      break;
    case kLayoutSparse:
      if (end > 0) NEED(0, "type ids");
      break;
    case kLayoutDense:
      if (end > 0) NEED(0, "type ids");
      if (end > 0) NEED(1, "offsets");
      break;
    default:
      break;
  }
  return 0;
}

/* Rows a child must have for its parent's rows [0, offset + length), or -1 for no such rule. */
static int64_t child_rows_needed(const struct ArrowArray* a, const FormatInfo* info) {
  int64_t end = a->offset + a->length;
  if (info->kind == kLayoutStruct || info->kind == kLayoutSparse) return end;
  if (info->kind != kLayoutFixedList) return -1;
  if (info->fixed_size > 0 && end > INT64_MAX / info->fixed_size) return INT64_MAX;
  return end * info->fixed_size;
}

static int fit_node(const struct ArrowArray* a, const struct ArrowSchema* s, int readable, Walk* w) {
  if (s == NULL || s->format == NULL) FAIL("the schema has no node here");
  FormatInfo info;
  char why[160];
  if (format_parse(s->format, &info, why, sizeof why)) FAIL("%s", why);
  const char* f = s->format;
  int64_t min, max;
  buffer_counts(&info, &min, &max);
  if (a->n_buffers < min || (max >= 0 && a->n_buffers > max)) {
    if (max < 0) FAIL("a '%s' array needs at least %lld buffers, got %lld", f, (long long)min, (long long)a->n_buffers);
    FAIL("a '%s' array has %lld buffers, got %lld", f, (long long)min, (long long)a->n_buffers);
  }
  if (a->n_children != s->n_children) {
    FAIL("a '%s' array has %lld children, got %lld", f, (long long)s->n_children, (long long)a->n_children);
  }
  if ((a->dictionary == NULL) != (s->dictionary == NULL)) {
    if (s->dictionary != NULL) FAIL("a dictionary-encoded '%s' array needs a dictionary, got none", f);
    FAIL("a '%s' array has no dictionary, got one", f);
  }
  if (a->null_count > a->length) FAIL("null_count %lld exceeds length %lld", (long long)a->null_count, (long long)a->length);
  if (buffers_check(a, &info, f, readable, w)) return -1;
  int64_t need = child_rows_needed(a, &info);
  NodePath* path = &w->path;
  path->depth++;
  for (int64_t i = 0; i < a->n_children; i++) {
    path->steps[path->depth - 1] = i;
    if (need >= 0 && a->children[i]->length < need) {
      FAIL("a child of a '%s' array needs length >= %lld, got %lld", f, (long long)need, (long long)a->children[i]->length);
    }
    if (fit_node(a->children[i], s->children[i], readable, w)) return -1;
  }
  if (a->dictionary != NULL) {
    path->steps[path->depth - 1] = -1;
    if (fit_node(a->dictionary, s->dictionary, readable, w)) return -1;
  }
  path->depth--;
  return 0;
}

int check_against_schema(const struct ArrowArray* array, const struct ArrowSchema* schema, int host_readable,
                         char* err, size_t err_len) {
  Walk walk = {.err = err, .err_len = err_len};
  node_path_init(&walk.path, "array");
  return fit_node(array, schema, host_readable, &walk);
}
