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
  void* keepalive;               /* PyObject* or NULL; dropped with the GIL held */
} Container;

/* Counters behind arrowdev.debug.ownership_stats(); updated atomically. */
typedef struct OwnershipStats {
  atomic_llong imports;           /* containers created (arrays moved in) */
  atomic_llong producer_releases; /* producer release callbacks called by containers */
  atomic_llong exported_nodes;    /* exported ArrowArray nodes not yet released */
  atomic_llong exported_streams;  /* exported streams not yet released */
  atomic_llong built_nodes;       /* arrowdev-made producer nodes not yet released */
} OwnershipStats;

extern OwnershipStats g_stats;

/* Checks that a producer's tree is well formed enough to hold (non-NULL pointers where the
 * counts need them, non-negative counts, set release callbacks). Returns 0, or -1 with a message
 * naming the node path in err. */
int arrow_array_check(const struct ArrowArray* array, char* err, size_t err_len);

/* Moves *src into a new container (src->array.release becomes NULL). NULL when out of memory. */
Container* container_move_from(struct ArrowDeviceArray* src, void* keepalive);
void container_incref(Container* c);
void container_decref(Container* c);

/* Exports the container's top node as a standalone tree into *dst, overriding offset, length and
 * null_count at the top (pass the node's own values to keep them). Returns 0 or ENOMEM. */
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

/* Drops a Python reference from any thread: takes the GIL, and leaks on purpose when the
 * interpreter is finalising (touching Python then would crash). Defined in module.c. */
void drop_python_ref(void* obj);

#endif /* ARROWDEV_CAPSULES_CONTAINER_H */
