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
 * C3 Release from anywhere (O3). Counts are C11 atomics. No release path takes a lock, and this
 *    file knows no Python: a keepalive object is let go through the hook the binding injects
 *    (container_set_keepalive_release; the Python binding's takes the GIL and, during interpreter
 *    finalisation, leaks the reference instead of crashing).
 * C4 Spec hygiene (O5). Every struct we fill is zeroed first, so reserved bytes are zero; every
 *    release sets release to NULL.
 * C5 A parent's release releases the children it still owns (release != NULL), whether or not a
 *    consumer moved others out. The nodes of one export share one allocation (NodeBlock), freed
 *    by whichever node is released last.
 * C6 Null counts (O5). An exported node whose producer's null_count is -1 carries the count that
 *    arrowdev computed for it, when the container has one (null_counts, given once by Python,
 *    which counts validity bits); the top node carries whatever count the caller passes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "released.h"

OwnershipStats g_stats;

static _Atomic(KeepaliveRelease) keepalive_release;

void container_set_keepalive_release(KeepaliveRelease release) { atomic_store(&keepalive_release, release); }

static void let_go(void* keepalive) {
  KeepaliveRelease release = atomic_load(&keepalive_release);
  if (keepalive != NULL && release != NULL) release(keepalive);
}

/* The nodes of one export (or one arrowdev-made node) share one allocation, a NodeBlock
 * (container.h): its header, then per node a NodePrivate followed by the node's child structs,
 * dictionary struct, child pointers and buffer pointers. Whichever node is released last, in
 * whatever order (C2, C5), frees it. */

/* The private data of every node arrowdev hands out: exported nodes (container != NULL) and
 * arrowdev-made producer nodes (keepalive, children exported from other containers). */
typedef struct NodePrivate {
  NodeBlock* block;
  Container* container;
  void* keepalive;
  const void** buffers;
  int64_t n_children;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  int64_t padding; /* sizeof a multiple of 16 */
} NodePrivate;

Container* container_move_from(struct ArrowDeviceArray* src, void* keepalive) {
  Container* c = calloc(1, sizeof *c);
  if (c == NULL) return NULL;
  memcpy(&c->array, src, sizeof *src);
  ArrowArrayMarkReleased(&src->array);
  c->keepalive = keepalive;
  atomic_init(&c->refs, 1);
  atomic_fetch_add(&g_stats.imports, 1);
  return c;
}

void container_incref(Container* c) { atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed); }

void container_decref(Container* c) {
  if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1) return;
  if (!ArrowArrayIsReleased(&c->array.array)) {
    c->array.array.release(&c->array.array);
    atomic_fetch_add(&g_stats.producer_releases, 1);
  }
  let_go(c->keepalive);
  free(c->null_counts);
  free(c);
}

int64_t tree_size(const struct ArrowArray* a) {
  int64_t n = 1;
  for (int64_t i = 0; i < a->n_children; i++) n += tree_size(a->children[i]);
  return a->dictionary != NULL ? n + tree_size(a->dictionary) : n;
}

static int has_unknown_null_count(const struct ArrowArray* a) {
  if (a->null_count < 0) return 1;
  for (int64_t i = 0; i < a->n_children; i++) {
    if (has_unknown_null_count(a->children[i])) return 1;
  }
  return a->dictionary != NULL && has_unknown_null_count(a->dictionary);
}

int container_needs_null_counts(const Container* c) {
  return c->null_counts == NULL && has_unknown_null_count(&c->array.array);
}

int container_set_null_counts(Container* c, int64_t* counts) {
  if (c->null_counts != NULL) {
    free(counts);
    return -1;
  }
  c->null_counts = counts;
  return 0;
}

int64_t container_top_null_count(const Container* c) {
  int64_t n = c->array.array.null_count;
  return n < 0 && c->null_counts != NULL ? c->null_counts[0] : n;
}

static void release_node(struct ArrowArray* array) {
  NodePrivate* p = (NodePrivate*)array->private_data;
  for (int64_t i = 0; i < p->n_children; i++) {
    struct ArrowArray* child = p->children[i];
    ArrowArrayReleaseIfLive(child);
  }
  if (p->dictionary != NULL) ArrowArrayReleaseIfLive(p->dictionary);
  if (p->container != NULL) {
    container_decref(p->container);
    atomic_fetch_sub(&g_stats.exported_nodes, 1);
  } else {
    atomic_fetch_sub(&g_stats.built_nodes, 1);
  }
  let_go(p->keepalive);
  NodeBlock* block = p->block;
  ArrowArrayMarkReleased(array); /* before the block may go: array itself may live in it */
  array->private_data = NULL;
  node_block_release_node(block, &g_stats.node_blocks);
}

static const int64_t kMaxCount = (int64_t)1 << 24; /* children or buffers per node: keeps sizes exact */

/* Bytes one node takes in a block, or 0 when its counts are beyond reason. */
static size_t node_bytes(int64_t n_buffers, int64_t n_children, int has_dictionary) {
  if (n_buffers > kMaxCount || n_children > kMaxCount) return 0;
  size_t bytes = sizeof(NodePrivate) + ((size_t)n_children + (has_dictionary != 0)) * sizeof(struct ArrowArray) +
                 ((size_t)n_children + (size_t)n_buffers) * sizeof(void*);
  return (bytes + 15) & ~(size_t)15;
}

/* Bytes the nodes of src's subtree take in a block (0 when one cannot be held), and their count. */
static size_t tree_bytes(const struct ArrowArray* src, int64_t* nodes) {
  size_t total = node_bytes(src->n_buffers, src->n_children, src->dictionary != NULL);
  *nodes += 1;
  for (int64_t i = 0; i < src->n_children && total > 0; i++) {
    size_t child = tree_bytes(src->children[i], nodes);
    total = child == 0 || total > SIZE_MAX / 2 ? 0 : total + child;
  }
  if (src->dictionary != NULL && total > 0) {
    size_t dictionary = tree_bytes(src->dictionary, nodes);
    total = dictionary == 0 || total > SIZE_MAX / 2 ? 0 : total + dictionary;
  }
  return total;
}

NodeBlock* node_block_new(size_t bytes, int64_t nodes, atomic_llong* live_blocks, char** cursor) {
  if (bytes == 0) return NULL;
  NodeBlock* block = calloc(1, sizeof(NodeBlock) + bytes);
  if (block == NULL) return NULL;
  atomic_init(&block->live_nodes, nodes);
  atomic_fetch_add(live_blocks, 1);
  *cursor = (char*)(block + 1);
  return block;
}

void node_block_release_node(NodeBlock* block, atomic_llong* live_blocks) {
  if (atomic_fetch_sub_explicit(&block->live_nodes, 1, memory_order_acq_rel) == 1) {
    free(block);
    atomic_fetch_sub(live_blocks, 1);
  }
}

/* Fills *dst with a node whose NodePrivate and pointer arrays are carved from the block at
 * *cursor (advanced past them), with release_node as release; its children and dictionary are
 * zeroed structs for the caller to fill. */
static NodePrivate* start_node(int64_t length, int64_t null_count, int64_t offset, int64_t n_buffers,
                               const void** buffers, int64_t n_children, int has_dictionary,
                               NodeBlock* block, char** cursor, struct ArrowArray* dst) {
  NodePrivate* p = (NodePrivate*)*cursor;
  *cursor += node_bytes(n_buffers, n_children, has_dictionary);
  struct ArrowArray* child_structs = (struct ArrowArray*)(p + 1);
  p->block = block;
  p->children = (struct ArrowArray**)(child_structs + n_children + (has_dictionary != 0));
  p->buffers = (const void**)(p->children + n_children);
  if (n_buffers > 0) memcpy((void*)p->buffers, buffers, (size_t)n_buffers * sizeof(void*));
  for (int64_t i = 0; i < n_children; i++) p->children[i] = &child_structs[i];
  p->n_children = n_children;
  p->dictionary = has_dictionary ? &child_structs[n_children] : NULL;
  memset(dst, 0, sizeof *dst);
  dst->length = length;
  dst->null_count = null_count;
  dst->offset = offset;
  dst->n_buffers = n_buffers;
  dst->n_children = n_children;
  dst->buffers = n_buffers > 0 ? p->buffers : NULL;
  dst->children = n_children > 0 ? p->children : NULL;
  dst->dictionary = p->dictionary;
  dst->release = release_node;
  dst->private_data = p;
  return p;
}

/* Exports node src of container c (node number *index in tree order, advanced past src's
 * subtree) into dst, its nodes carved from the block at *cursor. A null_count of -1 becomes the
 * container's computed count when it has one (C6). */
static void export_node(Container* c, const struct ArrowArray* src, NodeBlock* block, char** cursor,
                        struct ArrowArray* dst, int64_t* index) {
  int64_t null_count = src->null_count;
  if (null_count < 0 && c->null_counts != NULL) null_count = c->null_counts[*index];
  *index += 1;
  NodePrivate* p = start_node(src->length, null_count, src->offset, src->n_buffers, src->buffers,
                              src->n_children, src->dictionary != NULL, block, cursor, dst);
  container_incref(c);
  p->container = c;
  atomic_fetch_add(&g_stats.exported_nodes, 1);
  for (int64_t i = 0; i < src->n_children; i++) export_node(c, src->children[i], block, cursor, p->children[i], index);
  if (src->dictionary != NULL) export_node(c, src->dictionary, block, cursor, p->dictionary, index);
}

/* Exports src's subtree (node number index of c) into dst, in one new block. 0 or ENOMEM. */
static int export_tree(Container* c, const struct ArrowArray* src, int64_t index, struct ArrowArray* dst) {
  int64_t nodes = 0;
  size_t bytes = tree_bytes(src, &nodes); /* first: it counts the nodes */
  char* cursor;
  NodeBlock* block = node_block_new(bytes, nodes, &g_stats.node_blocks, &cursor);
  if (block == NULL) return ENOMEM;
  export_node(c, src, block, &cursor, dst, &index);
  return 0;
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
  int rc = export_tree(c, &c->array.array, 0, &dst->array);
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
  int64_t node = 1; /* the top is node 0; its children's subtrees come next, then the dictionary's */
  int64_t before = index < 0 ? top->n_children : index;
  for (int64_t i = 0; i < before; i++) node += tree_size(top->children[i]);
  int rc = export_tree(c, src, node, &dst->array);
  if (rc) return rc;
  set_device_fields(c, dst);
  return 0;
}

int build_array(int64_t length, int64_t null_count, int64_t offset, int64_t n_buffers,
                const void** buffers, int64_t n_children, Container** children,
                Container* dictionary, void* keepalive, struct ArrowArray* out) {
  char* cursor;
  NodeBlock* block = node_block_new(node_bytes(n_buffers, n_children, dictionary != NULL), 1, &g_stats.node_blocks, &cursor);
  if (block == NULL) return ENOMEM;
  NodePrivate* p = start_node(length, null_count, offset, n_buffers, buffers, n_children,
                              dictionary != NULL, block, &cursor, out);
  atomic_fetch_add(&g_stats.built_nodes, 1);
  int rc = 0;
  for (int64_t i = 0; i < n_children && rc == 0; i++) {
    rc = export_tree(children[i], &children[i]->array.array, 0, p->children[i]);
  }
  if (rc == 0 && dictionary != NULL) rc = export_tree(dictionary, &dictionary->array.array, 0, p->dictionary);
  if (rc) {
    release_node(out);
    return rc;
  }
  p->keepalive = keepalive; /* taken over only on success: the caller still owns it on failure */
  return 0;
}
