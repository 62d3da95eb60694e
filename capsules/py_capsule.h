/* py_capsule: the bottom layer of the Python binding (capsules/py_*.c). The PyCapsules of the
 * PyCapsule interface (their destructors, the struct inside one, a schema copy in a new one), the
 * binding's error type, and the keep-alive hook the binding injects into the core (container.h).
 *
 * Layer: on the core (schema.c, container.c's hook) and CPython only; every other py_ file sits
 * above it. Capsule names: arrow_schema, arrow_array, arrow_device_array, arrow_array_stream,
 * arrow_device_array_stream; a destructor calls release when the capsule was never consumed
 * (release != NULL), then frees the struct. */
#ifndef ARROWDEV_CAPSULES_PY_CAPSULE_H
#define ARROWDEV_CAPSULES_PY_CAPSULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "abi.h"

extern PyObject* InvalidArrowError; /* arrowdev.errors.InvalidArrowError, set by py_capsule_init */

/* Loads InvalidArrowError and injects the keep-alive hook into the core: 0, or -1 with an
 * exception. Once, from PyInit__capsules, before any other binding function runs. */
int py_capsule_init(void);

/* Capsule destructors: release the struct if never consumed, then free it. */
void schema_capsule_free(PyObject* capsule);
void array_capsule_free(PyObject* capsule);
void device_array_capsule_free(PyObject* capsule);
void stream_capsule_free(PyObject* capsule);
void device_stream_capsule_free(PyObject* capsule);

/* The struct inside a capsule of the expected name, or NULL with TypeError / ValueError set. */
void* capsule_struct(PyObject* capsule, const char* expected);

/* A new arrow_schema capsule holding a deep copy of *src, or NULL with MemoryError. */
PyObject* schema_capsule_copy(const struct ArrowSchema* src);

/* capsule_name(obj), a module function: a capsule's name ('' if unnamed), or None for other objects. */
PyObject* capsule_name(PyObject* module, PyObject* obj);

#endif /* ARROWDEV_CAPSULES_PY_CAPSULE_H */
