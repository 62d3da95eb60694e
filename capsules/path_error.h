/* Error messages that name the node they are about ("array.children[1].dictionary: ..."). */
#ifndef ARROWDEV_CAPSULES_PATH_ERROR_H
#define ARROWDEV_CAPSULES_PATH_ERROR_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

/* Where a node is in a tree: the child index taken at each level below the top (-1 for the
 * dictionary). Kept as numbers while a check walks the tree, and written out only when an error
 * names the node, so a check that passes formats nothing. */
typedef struct NodePath {
  int depth;
  int64_t steps[260]; /* checks refuse trees deeper than 256 levels (container.c) */
} NodePath;

/* Writes "<path>: <message>" into err; returns -1 so callers can `return path_error(...)`. */
static inline int path_error(char* err, size_t err_len, const NodePath* path, const char* format, ...) {
  int n = snprintf(err, err_len, "array");
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

#endif /* ARROWDEV_CAPSULES_PATH_ERROR_H */
