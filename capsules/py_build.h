/* py_build: build, the module function that makes an array of arrowdev's own (buffer addresses,
 * children, a dictionary) and checks it against its DataType before anyone sees it (C9).
 *
 * Layer: above py_array (what it makes is a held CDeviceArray, its children are ones) and py_types
 * (its type is a DataType); only py_module's method table uses it. */
#ifndef ARROWDEV_CAPSULES_PY_BUILD_H
#define ARROWDEV_CAPSULES_PY_BUILD_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* build(dtype, length, null_count, offset, buffers, children, dictionary=None, device_type=1,
 * device_id=-1, keepalive=None, sync_event=None): a held array of type dtype, checked against it
 * (ValueError when it does not fit). */
PyObject* build(PyObject* module, PyObject* args, PyObject* kwargs);

#endif /* ARROWDEV_CAPSULES_PY_BUILD_H */
