/* Released or not: the C Data interface marks a struct released by setting its release callback
 * to NULL. These helpers say so by name (as Arrow C++'s bridge.cc does), so no code writes
 * `release == NULL` inline. */
#ifndef ARROWDEV_CAPSULES_RELEASED_H
#define ARROWDEV_CAPSULES_RELEASED_H

#include <stddef.h>
#include "abi.h"

static inline int ArrowSchemaIsReleased(const struct ArrowSchema* s) { return s->release == NULL; }
static inline void ArrowSchemaMarkReleased(struct ArrowSchema* s) { s->release = NULL; }
/* Calls the release of a struct not released yet (a no-op on a released one). */
static inline void ArrowSchemaReleaseIfLive(struct ArrowSchema* s) {
  if (!ArrowSchemaIsReleased(s)) s->release(s);
}

static inline int ArrowArrayIsReleased(const struct ArrowArray* a) { return a->release == NULL; }
static inline void ArrowArrayMarkReleased(struct ArrowArray* a) { a->release = NULL; }
static inline void ArrowArrayReleaseIfLive(struct ArrowArray* a) {
  if (!ArrowArrayIsReleased(a)) a->release(a);
}

static inline int ArrowArrayStreamIsReleased(const struct ArrowArrayStream* s) { return s->release == NULL; }
static inline void ArrowArrayStreamMarkReleased(struct ArrowArrayStream* s) { s->release = NULL; }
static inline void ArrowArrayStreamReleaseIfLive(struct ArrowArrayStream* s) {
  if (!ArrowArrayStreamIsReleased(s)) s->release(s);
}

static inline int ArrowDeviceArrayStreamIsReleased(const struct ArrowDeviceArrayStream* s) { return s->release == NULL; }
static inline void ArrowDeviceArrayStreamMarkReleased(struct ArrowDeviceArrayStream* s) { s->release = NULL; }
static inline void ArrowDeviceArrayStreamReleaseIfLive(struct ArrowDeviceArrayStream* s) {
  if (!ArrowDeviceArrayStreamIsReleased(s)) s->release(s);
}

#endif /* ARROWDEV_CAPSULES_RELEASED_H */
