/* Checks a held array tree against its schema: buffer and child counts per format, dictionaries,
 * null counts, and children long enough for their parents. See check.c. */
#ifndef ARROWDEV_CAPSULES_CHECK_H
#define ARROWDEV_CAPSULES_CHECK_H

#include <stddef.h>
#include "abi.h"

/* 0 when every node of array fits the matching node of schema; else -1 and a message naming the
 * node's path and the problem in err. */
int check_against_schema(const struct ArrowArray* array, const struct ArrowSchema* schema, char* err,
                         size_t err_len);

#endif /* ARROWDEV_CAPSULES_CHECK_H */
