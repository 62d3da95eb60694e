/* py_values: the checks of values in received host buffers (values.c) seen from Python (py_values.h). Large
 * scans run without the GIL: a Dask worker receives on one thread while its tasks run on others. */
#include "py_values.h"

#include "values.h"

enum { kWithoutGil = 1 << 16 }; /* elements past which a scan lets other threads run */

/* The n int arguments as int64 (addresses too), or -1 with TypeError / OverflowError set. */
static int int_args(PyObject* const* args, Py_ssize_t nargs, Py_ssize_t n, const char* name, int64_t* out) {
  if (nargs != n) {
    PyErr_Format(PyExc_TypeError, "%s expects %zd int arguments, got %zd", name, n, nargs);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; i++) {
    out[i] = PyLong_AsLongLong(args[i]);
    if (out[i] == -1 && PyErr_Occurred()) return -1;
  }
  return 0;
}

#define PTR(v) ((const void*)(intptr_t)(v))
#define RUN(n, call)                        \
  int64_t found;                            \
  if ((n) > kWithoutGil) {                  \
    Py_BEGIN_ALLOW_THREADS found = (call);  \
    Py_END_ALLOW_THREADS                    \
  } else {                                  \
    found = (call);                         \
  }                                         \
  return PyLong_FromLongLong(found)

/* count_set(bitmap, bit_offset, length) */
PyObject* count_set(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  int64_t a[3];
  if (int_args(args, nargs, 3, "count_set", a)) return NULL;
  RUN(a[2] / 8, values_count_set(PTR(a[0]), a[1], a[2]));
}

/* check_offsets(address, width, n, low, high) */
PyObject* check_offsets(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  int64_t a[5];
  if (int_args(args, nargs, 5, "check_offsets", a)) return NULL;
  RUN(a[2], values_offsets(PTR(a[0]), (int)a[1], a[2], a[3], a[4]));
}

/* check_indices(address, width, signed, n, limit, validity, bit_offset) */
PyObject* check_indices(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  int64_t a[7];
  if (int_args(args, nargs, 7, "check_indices", a)) return NULL;
  RUN(a[3], values_indices(PTR(a[0]), (int)a[1], (int)a[2], a[3], a[4], PTR(a[5]), a[6]));
}

/* check_views(address, n, sizes, n_buffers, validity, bit_offset) */
PyObject* check_views(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  int64_t a[6];
  if (int_args(args, nargs, 6, "check_views", a)) return NULL;
  RUN(a[1], values_views(PTR(a[0]), a[1], PTR(a[2]), a[3], PTR(a[4]), a[5]));
}

/* check_list_views(offsets, sizes, width, n, limit) */
PyObject* check_list_views(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  int64_t a[5];
  if (int_args(args, nargs, 5, "check_list_views", a)) return NULL;
  RUN(a[3], values_list_views(PTR(a[0]), PTR(a[1]), (int)a[2], a[3], a[4]));
}

/* check_run_ends(address, width, n, end) */
PyObject* check_run_ends(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  int64_t a[4];
  if (int_args(args, nargs, 4, "check_run_ends", a)) return NULL;
  RUN(a[2], values_run_ends(PTR(a[0]), (int)a[1], a[2], a[3]));
}

/* check_union(type_ids, offsets or 0, n, lengths): lengths an address of 128 int64 */
PyObject* check_union(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  int64_t a[4];
  if (int_args(args, nargs, 4, "check_union", a)) return NULL;
  RUN(a[2], values_union(PTR(a[0]), PTR(a[1]), a[2], PTR(a[3])));
}
