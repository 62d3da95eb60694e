/* Walking a producer's tree safely: error messages that name the node they are about
 * ("schema.children[1].dictionary: ..."), and the set of nodes already seen, so that a tree whose
 * nodes are shared (or form a cycle) is refused in time linear in its distinct nodes. */
#ifndef ARROWDEV_CAPSULES_PATH_ERROR_H
#define ARROWDEV_CAPSULES_PATH_ERROR_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Trees nested deeper than this are refused: they are cycles or attacks, and every walk of a
 * held tree (copies, exports, keys) recurses. The one limit for schemas and arrays. */
enum { kMaxDepth = 256 };

/* Where a node is in a tree: the child index taken at each level below the top (-1 for the
 * dictionary). Kept as numbers while a check walks the tree, and written out only when an error
 * names the node, so a check that passes formats nothing. */
typedef struct NodePath {
  const char* root; /* "schema" or "array" */
  int depth;
  int64_t steps[kMaxDepth + 4];
} NodePath;

static inline void node_path_init(NodePath* path, const char* root) {
  path->root = root;
  path->depth = 0;
}

/* Writes "<path>: <message>" into err; returns -1 so callers can `return path_error(...)`. */
static inline int path_error(char* err, size_t err_len, const NodePath* path, const char* format, ...) {
  int n = snprintf(err, err_len, "%s", path->root);
  for (int i = 0; i < path->depth && n >= 0 && (size_t)n < err_len; i++) {
    n += path->steps[i] < 0 ? snprintf(err + n, err_len - n, ".dictionary")
                            : snprintf(err + n, err_len - n, ".children[%lld]", (long long)path->steps[i]);
  }
  if (n >= 0 && (size_t)n < err_len) n += snprintf(err + n, err_len - n, ": ");
  if (n >= 0 && (size_t)n < err_len) {
    va_list args;
    va_start(args, format);
    vsnprintf(err + n, err_len - n, format, args);
    va_end(args);
  }
  return -1;
}

/* The addresses of the nodes a walk has seen: an open-addressing hash set, inline for small
 * trees, on the heap beyond. Free it with node_set_free. */
typedef struct NodeSet {
  const void** slots;
  size_t cap, count;
  const void* inline_slots[64];
} NodeSet;

static inline void node_set_init(NodeSet* set) {
  memset(set->inline_slots, 0, sizeof set->inline_slots);
  set->slots = set->inline_slots;
  set->cap = 64;
  set->count = 0;
}

static inline void node_set_free(NodeSet* set) {
  if (set->slots != set->inline_slots) free((void*)set->slots);
  set->slots = set->inline_slots;
}

static inline size_t node_set_slot(const void** slots, size_t cap, const void* node) {
  size_t i = (size_t)(((uintptr_t)node >> 4) * 0x9E3779B97F4A7C15ull) & (cap - 1);
  while (slots[i] != NULL && slots[i] != node) i = (i + 1) & (cap - 1);
  return i;
}

/* Adds node: 1 when it was new, 0 when already there, -1 when out of memory. */
static inline int node_set_add(NodeSet* set, const void* node) {
  if (2 * (set->count + 1) > set->cap) {
    size_t cap = 2 * set->cap;
    const void** grown = calloc(cap, sizeof *grown);
    if (grown == NULL) return -1;
    for (size_t i = 0; i < set->cap; i++) {
      if (set->slots[i] != NULL) grown[node_set_slot(grown, cap, set->slots[i])] = set->slots[i];
    }
    node_set_free(set);
    set->slots = grown;
    set->cap = cap;
  }
  size_t i = node_set_slot(set->slots, set->cap, node);
  if (set->slots[i] == node) return 0;
  set->slots[i] = node;
  set->count++;
  return 1;
}

#endif /* ARROWDEV_CAPSULES_PATH_ERROR_H */
