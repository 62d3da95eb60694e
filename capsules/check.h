/* Checks of a producer's trees before anything reads them (C9, docs/architecture.md). See check.c. */
#ifndef ARROWDEV_CAPSULES_CHECK_H
#define ARROWDEV_CAPSULES_CHECK_H

#include <stddef.h>
#include "abi.h"

/* Every function returns 0 when the check passes, else -1 with a message in err that names the
 * node's path ("schema.children[0].dictionary: ...") and what was expected. */

/* A schema tree a producer made: nodes non-NULL, not released and not shared, formats parsed,
 * child counts and dictionaries as the formats say, names UTF-8, metadata lengths non-negative,
 * nesting at most kMaxDepth. After it passes, every walk of the tree in capsules/ is safe. */
int schema_check(const struct ArrowSchema* schema, char* err, size_t err_len);

/* An array tree a producer made, without its schema: nodes non-NULL, not released and not
 * shared, counts and lengths non-negative, pointers present where counts need them. */
int arrow_array_check(const struct ArrowArray* array, char* err, size_t err_len);

/* The device fields of an ArrowDeviceArray: a known device type, a device id that fits it. */
int device_fields_check(const struct ArrowDeviceArray* array, char* err, size_t err_len);

/* An array tree (already through arrow_array_check) against a schema (already through
 * schema_check): buffer and child counts per format, dictionaries, null counts, children long
 * enough for their parents, and buffers present wherever the array's length needs them. With
 * host_readable (CPU memory with no sync event) the sizes that only the data tells (a string
 * array's data bytes, a view array's variadic buffers) are read, as PyArrow's importer does;
 * on a device they are not, and those buffers are taken as they are. */
int check_against_schema(const struct ArrowArray* array, const struct ArrowSchema* schema, int host_readable,
                         char* err, size_t err_len);

#endif /* ARROWDEV_CAPSULES_CHECK_H */
