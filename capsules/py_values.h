/* py_values: the checks of values in received host buffers, seen from Python (the scans are values.c's):
 * for arrowdev/serialize/values.py. Each takes int arguments (addresses the caller has checked to hold what is
 * passed) and returns -1 when the values pass, else the index of the first that does not (count_set: the set
 * bits). Large scans run without the GIL.
 *
 * Layer: uses nothing of the binding; only py_module uses it. */
#ifndef ARROWDEV_CAPSULES_PY_VALUES_H
#define ARROWDEV_CAPSULES_PY_VALUES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* count_set(bitmap, bit_offset, length) */
PyObject* count_set(PyObject* m, PyObject* const* args, Py_ssize_t nargs);
/* check_offsets(address, width, n, low, high[, split_bytes, threads]): large buffers by several threads
 * (values_offsets; by default VALUES_SPLIT_BYTES and half the CPUs online) */
PyObject* check_offsets(PyObject* m, PyObject* const* args, Py_ssize_t nargs);
/* check_indices(address, width, signed, n, limit, validity, bit_offset) */
PyObject* check_indices(PyObject* m, PyObject* const* args, Py_ssize_t nargs);
/* check_views(address, n, sizes, n_buffers, validity, bit_offset) */
PyObject* check_views(PyObject* m, PyObject* const* args, Py_ssize_t nargs);
/* check_list_views(offsets, sizes, width, n, limit) */
PyObject* check_list_views(PyObject* m, PyObject* const* args, Py_ssize_t nargs);
/* check_run_ends(address, width, n, end) */
PyObject* check_run_ends(PyObject* m, PyObject* const* args, Py_ssize_t nargs);
/* check_union(type_ids, offsets or 0, n, lengths: the address of 128 int64) */
PyObject* check_union(PyObject* m, PyObject* const* args, Py_ssize_t nargs);

#endif /* ARROWDEV_CAPSULES_PY_VALUES_H */
