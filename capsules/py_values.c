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

/* The scans, by what a module function asked for (its int arguments in a). */
enum Scan { kCountSet, kOffsets, kIndices, kViews, kListViews, kRunEnds, kUnion };

static int64_t run(enum Scan scan, const int64_t* a) {
  switch (scan) {
    case kCountSet: return values_count_set(PTR(a[0]), a[1], a[2]);
    case kOffsets: return values_offsets(PTR(a[0]), (int)a[1], a[2], a[3], a[4], a[5], (int)a[6]);
    case kIndices: return values_indices(PTR(a[0]), (int)a[1], (int)a[2], a[3], a[4], PTR(a[5]), a[6]);
    case kViews: return values_views(PTR(a[0]), a[1], PTR(a[2]), a[3], PTR(a[4]), a[5]);
    case kListViews: return values_list_views(PTR(a[0]), PTR(a[1]), (int)a[2], a[3], a[4]);
    case kRunEnds: return values_run_ends(PTR(a[0]), (int)a[1], a[2], a[3]);
    default: return values_union(PTR(a[0]), PTR(a[1]), a[2], PTR(a[3]));
  }
}

/* A scan of n elements: without the GIL when n is large. */
static PyObject* scan_of(enum Scan scan, const int64_t* a, int64_t n) {
  int64_t found;
  if (n > kWithoutGil) {
    Py_BEGIN_ALLOW_THREADS
    found = run(scan, a);
    Py_END_ALLOW_THREADS
  } else {
    found = run(scan, a);
  }
  return PyLong_FromLongLong(found);
}

PyObject* count_set(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  int64_t a[3];
  return int_args(args, nargs, 3, "count_set", a) ? NULL : scan_of(kCountSet, a, a[2] / 8);
}

/* The last two arguments (split_bytes, threads) may be left out: VALUES_SPLIT_BYTES and half the CPUs online. */
PyObject* check_offsets(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  int64_t a[7] = {0, 0, 0, 0, 0, VALUES_SPLIT_BYTES, 0};
  Py_ssize_t given = nargs >= 5 && nargs <= 7 ? nargs : 5;
  return int_args(args, nargs, given, "check_offsets", a) ? NULL : scan_of(kOffsets, a, a[2]);
}

PyObject* check_indices(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  int64_t a[7];
  return int_args(args, nargs, 7, "check_indices", a) ? NULL : scan_of(kIndices, a, a[3]);
}

PyObject* check_views(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  int64_t a[6];
  return int_args(args, nargs, 6, "check_views", a) ? NULL : scan_of(kViews, a, a[1]);
}

PyObject* check_list_views(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  int64_t a[5];
  return int_args(args, nargs, 5, "check_list_views", a) ? NULL : scan_of(kListViews, a, a[3]);
}

PyObject* check_run_ends(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  int64_t a[4];
  return int_args(args, nargs, 4, "check_run_ends", a) ? NULL : scan_of(kRunEnds, a, a[2]);
}

PyObject* check_union(PyObject* m, PyObject* const* args, Py_ssize_t nargs) {
  int64_t a[4];
  return int_args(args, nargs, 4, "check_union", a) ? NULL : scan_of(kUnion, a, a[2]);
}
