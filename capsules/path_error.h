/* Error messages that name the node they are about ("array.children[1].dictionary: ..."). */
#ifndef ARROWDEV_CAPSULES_PATH_ERROR_H
#define ARROWDEV_CAPSULES_PATH_ERROR_H

#include <stdarg.h>
#include <stdio.h>

/* Writes "<path>: <message>" into err; returns -1 so callers can `return path_error(...)`. */
static inline int path_error(char* err, size_t err_len, const char* path, const char* format, ...) {
  int n = snprintf(err, err_len, "%s: ", path);
  if (n >= 0 && (size_t)n < err_len) {
    va_list args;
    va_start(args, format);
    vsnprintf(err + n, err_len - n, format, args);
    va_end(args);
  }
  return -1;
}

#endif /* ARROWDEV_CAPSULES_PATH_ERROR_H */
