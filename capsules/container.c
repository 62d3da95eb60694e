/* arrowdev's shared-ownership container for Arrow C Device Data, and the export of its nodes.
 *
 * Invariants (each has tests in tests/test_ownership.py; design.md calls them O1-O5):
 * C1 Move, never copy (O1). container_move_from takes a bitwise copy of the producer's struct and
 *    sets the source's release to NULL. The producer's release runs exactly once, in
 *    container_decref, when the last reference goes: the owning Python object, each exported node
 *    of each re-export (children and dictionaries included, moved out or not), each container made
 *    from a slice or a child of this one.
 * C2 Every exported node stands alone (O2). Each node of an export (top, every child, the
 *    dictionary) has its own release and its own NodePrivate as private_data, holding its own
 *    container reference. private_data never points into the ArrowArray itself, so a consumer may
 *    move any node out bitwise and release the nodes in any order.
 * C3 Release from anywhere (O3). Counts are C11 atomics. No release path takes a lock or touches
 *    Python, except drop_python_ref for a keep-alive object, which takes the GIL and, during
 *    interpreter finalisation, leaks the reference instead of crashing.
 * C4 Spec hygiene (O5). Every struct we fill is zeroed first, so reserved bytes are zero; every
 *    release sets release to NULL.
 * C5 A parent's release releases the children it still owns (release != NULL), then frees the
 *    child structs it allocated, whether or not a consumer moved them out.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "path_error.h"

OwnershipStats g_stats;

/* The private data of every node arrowdev hands out: exported nodes (container != NULL) and
 * arrowdev-made producer nodes (keepalive, children exported from other containers). */
typedef struct NodePrivate {
  Container* container;
  void* keepalive;
  const void** buffers;
  int64_t n_children;
  struct ArrowArray** children;
  struct ArrowArray* child_structs;
  struct ArrowArray* dictionary;
} NodePrivate;

static const int kMaxDepth = 256; /* deeper trees are refused: they are cycles or attacks */

static int check_node(const struct ArrowArray* a, char* path, size_t path_len, int depth,
                      char* err, size_t err_len) {
#define FAIL(...) return path_error(err, err_len, path, __VA_ARGS__)
  if (a == NULL) FAIL("node pointer is NULL");
  if (depth > kMaxDepth) FAIL("nested deeper than %d levels", kMaxDepth);
  if (a->release == NULL) FAIL("struct is released (release is NULL)");
  if (a->length < 0) FAIL("negative length %lld", (long long)a->length);
  if (a->offset < 0) FAIL("negative offset %lld", (long long)a->offset);
  if (a->null_count < -1) FAIL("null_count %lld is below -1", (long long)a->null_count);
  if (a->n_buffers < 0) FAIL("negative n_buffers %lld", (long long)a->n_buffers);
  if (a->n_children < 0) FAIL("negative n_children %lld", (long long)a->n_children);
  if (a->n_buffers > 0 && a->buffers == NULL) FAIL("n_buffers is %lld but buffers is NULL", (long long)a->n_buffers);
  if (a->n_children > 0 && a->children == NULL) FAIL("n_children is %lld but children is NULL", (long long)a->n_children);
  size_t used = strlen(path);
  for (int64_t i = 0; i < a->n_children; i++) {
    snprintf(path + used, path_len - used, ".children[%lld]", (long long)i);
    if (check_node(a->children[i], path, path_len, depth + 1, err, err_len)) return -1;
  }
  if (a->dictionary != NULL) {
    snprintf(path + used, path_len - used, ".dictionary");
    if (check_node(a->dictionary, path, path_len, depth + 1, err, err_len)) return -1;
  }
  path[used] = '\0';
  return 0;
#undef FAIL
}

int arrow_array_check(const struct ArrowArray* array, char* err, size_t err_len) {
  char path[1024] = "array";
  return check_node(array, path, sizeof path, 0, err, err_len);
}

Container* container_move_from(struct ArrowDeviceArray* src, void* keepalive) {
  Container* c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  memcpy(&c->array, src, sizeof *src);
  src->array.release = NULL;
  c->keepalive = keepalive;
  atomic_init(&c->refs, 1);
  atomic_fetch_add(&g_stats.imports, 1);
  return c;
}

void container_incref(Container* c) { atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed); }

void container_decref(Container* c) {
  if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1) return;
  if (c->array.array.release != NULL) {
    c->array.array.release(&c->array.array);
    atomic_fetch_add(&g_stats.producer_releases, 1);
  }
  if (c->keepalive != NULL) drop_python_ref(c->keepalive);
  free(c);
}

static void release_node(struct ArrowArray* array) {
  NodePrivate* p = (NodePrivate*)array->private_data;
  for (int64_t i = 0; i < p->n_children; i++) {
    struct ArrowArray* child = p->children[i];
    if (child->release != NULL) child->release(child);
  }
  if (p->dictionary != NULL && p->dictionary->release != NULL) p->dictionary->release(p->dictionary);
  free(p->dictionary);
  free(p->child_structs);
  free(p->children);
  free(p->buffers);
  if (p->container != NULL) {
    container_decref(p->container);
    atomic_fetch_sub(&g_stats.exported_nodes, 1);
  } else {
    atomic_fetch_sub(&g_stats.built_nodes, 1);
  }
  if (p->keepalive != NULL) drop_python_ref(p->keepalive);
  free(p);
  array->release = NULL;
  array->private_data = NULL;
}

/* Fills *dst with a node that owns copies of the pointer arrays and release_node as release;
 * its children and dictionary are zeroed structs for the caller to fill. On failure *dst is
 * released (what was made is freed) and ENOMEM returned. */
static int start_node(int64_t length, int64_t null_count, int64_t offset, int64_t n_buffers,
                      const void** buffers, int64_t n_children, int has_dictionary,
                      struct ArrowArray* dst, NodePrivate** out) {
  memset(dst, 0, sizeof *dst);
  NodePrivate* p = calloc(1, sizeof *p);
  if (p == NULL) return ENOMEM;
  dst->length = length;
  dst->null_count = null_count;
  dst->offset = offset;
  dst->n_buffers = n_buffers;
  dst->n_children = n_children;
  dst->release = release_node;
  dst->private_data = p;
  int failed = 0;
  if (n_buffers > 0) {
    p->buffers = malloc((size_t)n_buffers * sizeof(void*));
    if (p->buffers != NULL) memcpy((void*)p->buffers, buffers, (size_t)n_buffers * sizeof(void*));
    failed |= p->buffers == NULL;
  }
  if (n_children > 0 && !failed) {
    p->children = calloc((size_t)n_children, sizeof(struct ArrowArray*));
    p->child_structs = calloc((size_t)n_children, sizeof(struct ArrowArray));
    failed |= p->children == NULL || p->child_structs == NULL;
    if (!failed) {
      for (int64_t i = 0; i < n_children; i++) p->children[i] = &p->child_structs[i];
      p->n_children = n_children;
    }
  }
  if (has_dictionary && !failed) {
    p->dictionary = calloc(1, sizeof(struct ArrowArray));
    failed |= p->dictionary == NULL;
  }
  dst->buffers = p->buffers;
  dst->children = p->children;
  dst->dictionary = p->dictionary;
  *out = p;
  if (failed) {
    atomic_fetch_add(&g_stats.built_nodes, 1); /* release_node counts it back down */
    release_node(dst);
    return ENOMEM;
  }
  return 0;
}

static int export_node(Container* c, const struct ArrowArray* src, struct ArrowArray* dst) {
  NodePrivate* p;
  int rc = start_node(src->length, src->null_count, src->offset, src->n_buffers, src->buffers,
                      src->n_children, src->dictionary != NULL, dst, &p);
  if (rc) return rc;
  container_incref(c);
  p->container = c;
  atomic_fetch_add(&g_stats.exported_nodes, 1);
  for (int64_t i = 0; i < src->n_children && rc == 0; i++) {
    rc = export_node(c, src->children[i], p->children[i]);
  }
  if (rc == 0 && src->dictionary != NULL) rc = export_node(c, src->dictionary, p->dictionary);
  if (rc) release_node(dst);
  return rc;
}

static void set_device_fields(const Container* c, struct ArrowDeviceArray* dst) {
  dst->device_id = c->array.device_id;
  dst->device_type = c->array.device_type;
  dst->sync_event = c->array.sync_event;
  memset(dst->reserved, 0, sizeof dst->reserved);
}

int container_export(Container* c, int64_t offset, int64_t length, int64_t null_count,
                     struct ArrowDeviceArray* dst) {
  memset(dst, 0, sizeof *dst);
  int rc = export_node(c, &c->array.array, &dst->array);
  if (rc) return rc;
  dst->array.offset = offset;
  dst->array.length = length;
  dst->array.null_count = null_count;
  set_device_fields(c, dst);
  return 0;
}

int container_export_child(Container* c, int64_t index, struct ArrowDeviceArray* dst) {
  memset(dst, 0, sizeof *dst);
  const struct ArrowArray* top = &c->array.array;
  const struct ArrowArray* src = index < 0 ? top->dictionary : top->children[index];
  int rc = export_node(c, src, &dst->array);
  if (rc) return rc;
  set_device_fields(c, dst);
  return 0;
}

int build_array(int64_t length, int64_t null_count, int64_t offset, int64_t n_buffers,
                const void** buffers, int64_t n_children, Container** children,
                Container* dictionary, void* keepalive, struct ArrowArray* out) {
  NodePrivate* p;
  int rc = start_node(length, null_count, offset, n_buffers, buffers, n_children,
                      dictionary != NULL, out, &p);
  if (rc) return rc;
  atomic_fetch_add(&g_stats.built_nodes, 1);
  for (int64_t i = 0; i < n_children && rc == 0; i++) {
    rc = export_node(children[i], &children[i]->array.array, p->children[i]);
  }
  if (rc == 0 && dictionary != NULL) rc = export_node(dictionary, &dictionary->array.array, p->dictionary);
  if (rc) {
    release_node(out);
    return rc;
  }
  p->keepalive = keepalive; /* taken over only on success: the caller still owns it on failure */
  return 0;
}
