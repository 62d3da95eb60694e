/* arrowdev._capsules, capsules: the bottom of the binding (see py_capsule.h). Nothing here knows a
 * DataType, a held array or a column; everything above uses it. */
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "py_capsule.h"
#include "released.h"
#include "schema.h"

PyObject* InvalidArrowError; /* arrowdev.errors.InvalidArrowError */

/* The keepalive hook of the core (container.h): drops a Python reference from any thread. */
static void drop_python_ref(void* obj) {
#if PY_VERSION_HEX >= 0x030D0000
  int finalizing = Py_IsFinalizing();
#else
  int finalizing = _Py_IsFinalizing();
#endif
  if (finalizing || !Py_IsInitialized()) return; /* C3: leak rather than crash at exit */
  PyGILState_STATE state = PyGILState_Ensure();
  Py_DECREF((PyObject*)obj);
  PyGILState_Release(state);
}

int py_capsule_init(void) {
  container_set_keepalive_release(drop_python_ref);
  PyObject* errors = PyImport_ImportModule("arrowdev.errors");
  if (errors == NULL) return -1;
  InvalidArrowError = PyObject_GetAttrString(errors, "InvalidArrowError");
  Py_DECREF(errors);
  return InvalidArrowError == NULL ? -1 : 0;
}

void schema_capsule_free(PyObject* capsule) {
  struct ArrowSchema* s = PyCapsule_GetPointer(capsule, "arrow_schema");
  if (s == NULL) return PyErr_WriteUnraisable(capsule);
  ArrowSchemaReleaseIfLive(s);
  free(s);
}

void array_capsule_free(PyObject* capsule) {
  struct ArrowArray* a = PyCapsule_GetPointer(capsule, "arrow_array");
  if (a == NULL) return PyErr_WriteUnraisable(capsule);
  ArrowArrayReleaseIfLive(a);
  free(a);
}

void device_array_capsule_free(PyObject* capsule) {
  struct ArrowDeviceArray* a = PyCapsule_GetPointer(capsule, "arrow_device_array");
  if (a == NULL) return PyErr_WriteUnraisable(capsule);
  ArrowArrayReleaseIfLive(&a->array);
  free(a);
}

void stream_capsule_free(PyObject* capsule) {
  struct ArrowArrayStream* s = PyCapsule_GetPointer(capsule, "arrow_array_stream");
  if (s == NULL) return PyErr_WriteUnraisable(capsule);
  ArrowArrayStreamReleaseIfLive(s);
  free(s);
}

void device_stream_capsule_free(PyObject* capsule) {
  struct ArrowDeviceArrayStream* s = PyCapsule_GetPointer(capsule, "arrow_device_array_stream");
  if (s == NULL) return PyErr_WriteUnraisable(capsule);
  ArrowDeviceArrayStreamReleaseIfLive(s);
  free(s);
}

void* capsule_struct(PyObject* capsule, const char* expected) {
  if (!PyCapsule_CheckExact(capsule)) {
    PyErr_Format(PyExc_TypeError, "expected a PyCapsule named '%s', got %.200s", expected,
                 Py_TYPE(capsule)->tp_name);
    return NULL;
  }
  const char* name = PyCapsule_GetName(capsule);
  if (name == NULL || strcmp(name, expected) != 0) {
    PyErr_Format(PyExc_ValueError, "expected a PyCapsule named '%s', got one named '%s'", expected,
                 name == NULL ? "(null)" : name);
    return NULL;
  }
  return PyCapsule_GetPointer(capsule, expected);
}

PyObject* schema_capsule_copy(const struct ArrowSchema* src) {
  struct ArrowSchema* out = malloc(sizeof *out);
  if (out == NULL || schema_deep_copy(src, out) != 0) {
    free(out);
    return PyErr_NoMemory();
  }
  PyObject* capsule = PyCapsule_New(out, "arrow_schema", schema_capsule_free);
  if (capsule == NULL) {
    out->release(out);
    free(out);
  }
  return capsule;
}

PyObject* capsule_name(PyObject* module, PyObject* obj) {
  if (!PyCapsule_CheckExact(obj)) Py_RETURN_NONE;
  const char* name = PyCapsule_GetName(obj);
  return PyUnicode_FromString(name == NULL ? "" : name);
}
