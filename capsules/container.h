/* The shared-ownership container and the export of its nodes. See container.c for the invariants. */
#ifndef ARROWDEV_CAPSULES_CONTAINER_H
#define ARROWDEV_CAPSULES_CONTAINER_H

#include <stdatomic.h>
#include <stddef.h>
#include "abi.h"

/* One imported ArrowDeviceArray, moved in, plus an optional Python object it keeps alive. */
typedef struct Container {
  atomic_llong refs;
  struct ArrowDeviceArray array; /* array.array.release is the producer's */
  void* keepalive;               /* the binding's object (a PyObject*) or NULL; let go by the hook */
  int64_t* null_counts;          /* NULL, or one count per node (tree order, see tree_size) that
                                    exports carry where the producer's node says -1; set once */
} Container;

/* Counters behind arrowdev.debug.ownership_stats(); updated atomically. */
typedef struct OwnershipStats {
  atomic_llong imports;           /* containers created (arrays moved in) */
  atomic_llong producer_releases; /* producer release callbacks called by containers */
  atomic_llong exported_nodes;    /* exported ArrowArray nodes not yet released */
  atomic_llong exported_streams;  /* exported streams not yet released */
  atomic_llong built_nodes;       /* arrowdev-made producer nodes not yet released */
  atomic_llong node_blocks;       /* allocations holding exported / built nodes, not yet freed */
  atomic_llong schema_blocks;     /* allocations holding schema copies (schema.c), not yet freed */
} OwnershipStats;

extern OwnershipStats g_stats;

/* One allocation shared by the nodes of one export or one schema copy: this header, then the nodes.
 * It counts its unreleased nodes; whichever is released last, in whatever order, frees it. */
typedef struct NodeBlock {
  atomic_llong live_nodes;
  int64_t padding; /* keeps what follows 16-byte aligned, as malloc's own blocks are */
} NodeBlock;

/* A zeroed block of `bytes` after the header for `nodes` nodes, counted in *live_blocks (a
 * g_stats counter); *cursor is where the first node goes. NULL when bytes is 0 or out of memory. */
NodeBlock* node_block_new(size_t bytes, int64_t nodes, atomic_llong* live_blocks, char** cursor);

/* One node of the block is released: frees the block after its last node. */
void node_block_release_node(NodeBlock* block, atomic_llong* live_blocks);

/* Moves *src into a new container (src->array.release becomes NULL). NULL when out of memory. */
Container* container_move_from(struct ArrowDeviceArray* src, void* keepalive);
void container_incref(Container* c);
void container_decref(Container* c);

/* Nodes in a tree, in the order null_counts is indexed: a node, then its children's subtrees in
 * order, then its dictionary's subtree. */
int64_t tree_size(const struct ArrowArray* array);

/* 1 when a node has null_count -1 and no null_counts were given yet, else 0. */
int container_needs_null_counts(const Container* c);

/* Takes counts (malloc'd, tree_size(top) of them, each -1 or a node's computed null count) as the
 * container's null_counts; 0, or -1 (and counts freed) when the container has them already. */
int container_set_null_counts(Container* c, int64_t* counts);

/* The null count an export of the top node carries by default: the producer's, else the computed
 * one in null_counts, else -1. */
int64_t container_top_null_count(const Container* c);

/* Exports the container's top node as a standalone tree into *dst, overriding offset, length and
 * null_count at the top (pass the node's own values to keep them); the nodes below carry their
 * null_counts where the producer's say -1. Returns 0 or ENOMEM. */
int container_export(Container* c, int64_t offset, int64_t length, int64_t null_count,
                     struct ArrowDeviceArray* dst);

/* Exports one child (index >= 0) or the dictionary (index == -1) of the top node. */
int container_export_child(Container* c, int64_t index, struct ArrowDeviceArray* dst);

/* Makes a producer node of arrowdev's own: the given buffers and the top nodes of the given
 * containers as children (and dictionary, may be NULL), keeping keepalive (a PyObject*, may be
 * NULL) alive until released. Returns 0 or ENOMEM. */
int build_array(int64_t length, int64_t null_count, int64_t offset, int64_t n_buffers,
                const void** buffers, int64_t n_children, Container** children,
                Container* dictionary, void* keepalive, struct ArrowArray* out);

/* How a keepalive (a container's or an arrowdev-made node's) is let go when its holder is
 * released: the language binding's business, injected once at start-up (the Python binding's
 * drops a reference with the GIL, from any thread, C3). The core never calls the binding
 * otherwise; with no hook set, keepalives are left alone. */
typedef void (*KeepaliveRelease)(void* keepalive);
void container_set_keepalive_release(KeepaliveRelease release);

#endif /* ARROWDEV_CAPSULES_CONTAINER_H */
