/* py_stream: streams seen from Python. CArrayStream (an imported ArrowArrayStream /
 * ArrowDeviceArrayStream, pulled array by array) and the module functions import_stream and
 * export_stream; the exported streams themselves are the core's (stream.c).
 *
 * Layer: above py_array (each array pulled is held, each array exported is a held one) and
 * py_capsule; only py_module uses it. */
#ifndef ARROWDEV_CAPSULES_PY_STREAM_H
#define ARROWDEV_CAPSULES_PY_STREAM_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

extern PyTypeObject CArrayStreamType;

/* import_stream(capsule): takes an arrow_array_stream / arrow_device_array_stream capsule. */
PyObject* import_stream(PyObject* module, PyObject* capsule);

/* export_stream(schema_capsule, arrays, device, device_type=1): a stream capsule (moves the schema). */
PyObject* export_stream(PyObject* module, PyObject* args);

#endif /* ARROWDEV_CAPSULES_PY_STREAM_H */
