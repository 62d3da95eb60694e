/* Schema trees: deep copies that stand alone, and keys that identify a tree's content. See schema.c. */
#ifndef ARROWDEV_CAPSULES_SCHEMA_H
#define ARROWDEV_CAPSULES_SCHEMA_H

#include <stddef.h>
#include "abi.h"

/* Deep-copies a schema tree into *dst, with a release of our own. Returns 0 or ENOMEM. */
int schema_deep_copy(const struct ArrowSchema* src, struct ArrowSchema* dst);

/* 1 when the trees have the same content (what schema_key encodes), else 0. a must be well
 * formed (arrowdev's own copy); b may be anything a producer made: it is read only as far as it
 * matches a. */
int schema_equal(const struct ArrowSchema* a, const struct ArrowSchema* b);

/* A growable byte string; starts in its inline bytes and moves to the heap when it outgrows them. */
typedef struct SchemaKey {
  char* data;
  size_t len, cap;
  int failed; /* out of memory */
  char inline_bytes[256];
} SchemaKey;

/* Writes into *key (initialised here; free it with schema_key_free) a byte string that is equal for
 * two trees exactly when their formats, names, metadata, flags, children and dictionaries are equal.
 * Returns -1 when the tree cannot be walked safely (a NULL or released node, a NULL format or
 * children array, nesting deeper than 256), 0 otherwise (check key->failed for out of memory). */
int schema_key(const struct ArrowSchema* schema, SchemaKey* key);
void schema_key_free(SchemaKey* key);

#endif /* ARROWDEV_CAPSULES_SCHEMA_H */
