/* What the Python bindings of the native core share between module.c and stream_module.c. */
#ifndef ARROWDEV_CAPSULES_MODULE_H
#define ARROWDEV_CAPSULES_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "container.h"

typedef struct {
  PyObject_HEAD Container* container;
} CDeviceArrayObject;

extern PyObject* InvalidArrowError; /* arrowdev.errors.InvalidArrowError */
extern PyTypeObject CDeviceArrayType;
extern PyTypeObject CArrayStreamType;

/* Capsule destructors: release the struct if never consumed, then free it. */
void schema_capsule_free(PyObject* capsule);
void stream_capsule_free(PyObject* capsule);
void device_stream_capsule_free(PyObject* capsule);

/* The struct inside a capsule of the expected name, or NULL with TypeError / ValueError set. */
void* capsule_struct(PyObject* capsule, const char* expected);

/* Checks *src, then moves it into a new CDeviceArray; on a bad tree nothing is moved. */
PyObject* hold(struct ArrowDeviceArray* src, PyObject* keepalive);

/* A sequence of CDeviceArray as a new C array of their containers (borrowed), or NULL with an error. */
Container** containers_of(PyObject* seq, Py_ssize_t* n);

/* The stream functions of the module (stream_module.c). */
PyObject* import_stream(PyObject* module, PyObject* capsule);
PyObject* export_stream(PyObject* module, PyObject* args);

#endif /* ARROWDEV_CAPSULES_MODULE_H */
