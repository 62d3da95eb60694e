/* py_import: how a producer's arrays come in, as module functions: import_array,
 * import_device_array, import_pair, and import_from (read_arrow's fast path, which walks the
 * protocol order that Python registers once, register_protocols).
 *
 * Layer: above py_column (import_from can make a column), py_array (what comes in is held),
 * py_types (the type cache) and py_capsule; only py_module's method table uses it. */
#ifndef ARROWDEV_CAPSULES_PY_IMPORT_H
#define ARROWDEV_CAPSULES_PY_IMPORT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyObject* import_array(PyObject* module, PyObject* capsule);
PyObject* import_device_array(PyObject* module, PyObject* capsule);
PyObject* import_pair(PyObject* module, PyObject* const* args, Py_ssize_t nargs);
PyObject* import_from(PyObject* module, PyObject* const* args, Py_ssize_t nargs);

/* register_protocols(order): the import protocols in arrowdev's order (a tuple of str), the one
 * order both read_arrow (Python) and import_from follow. */
PyObject* register_protocols(PyObject* module, PyObject* order);

#endif /* ARROWDEV_CAPSULES_PY_IMPORT_H */
