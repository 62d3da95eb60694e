/* Exported array streams (CPU and device) over arrays arrowdev already holds. See stream.c. */
#ifndef ARROWDEV_CAPSULES_STREAM_H
#define ARROWDEV_CAPSULES_STREAM_H

#include "container.h"

/* Makes a stream that yields the given exports in order. Takes ownership of *schema (moved) and
 * of the n arrays (moved), whatever the result. device_type is the stream's device type. */
int export_device_stream(struct ArrowSchema* schema, struct ArrowDeviceArray* arrays, int64_t n,
                         ArrowDeviceType device_type, struct ArrowDeviceArrayStream* out);
int export_array_stream(struct ArrowSchema* schema, struct ArrowDeviceArray* arrays, int64_t n,
                        struct ArrowArrayStream* out);

#endif /* ARROWDEV_CAPSULES_STREAM_H */
