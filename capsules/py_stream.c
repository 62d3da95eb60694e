/* arrowdev._capsules, streams: CArrayStream (an imported ArrowArrayStream / ArrowDeviceArrayStream, pulled
 * array by array with the GIL released around the producer's callbacks) and the module's import_stream and
 * export_stream functions. The exported streams themselves are stream.c. See py_stream.h for the layer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "py_array.h"
#include "py_capsule.h"
#include "py_stream.h"
#include "released.h"
#include "stream.h"

/* ---- CArrayStream (import) ------------------------------------------------------------- */

typedef struct {
  PyObject_HEAD int is_device;
  struct ArrowArrayStream cpu;
  struct ArrowDeviceArrayStream device;
} CArrayStreamObject;


static int stream_is_live(CArrayStreamObject* self) {
  return self->is_device ? !ArrowDeviceArrayStreamIsReleased(&self->device) : !ArrowArrayStreamIsReleased(&self->cpu);
}

static void stream_release(CArrayStreamObject* self) {
  if (self->is_device) ArrowDeviceArrayStreamReleaseIfLive(&self->device);
  else ArrowArrayStreamReleaseIfLive(&self->cpu);
}

static PyObject* stream_error(CArrayStreamObject* self, const char* what, int code) {
  const char* msg = self->is_device ? self->device.get_last_error(&self->device)
                                    : self->cpu.get_last_error(&self->cpu);
  PyErr_Format(InvalidArrowError, "%s failed (%d): %s", what, code, msg ? msg : strerror(code));
  return NULL;
}

static PyObject* CArrayStream_get_schema(CArrayStreamObject* self, PyObject* unused) {
  if (!stream_is_live(self)) return PyErr_Format(PyExc_ValueError, "the stream is released");
  struct ArrowSchema* schema = calloc(1, sizeof *schema);
  if (schema == NULL) return PyErr_NoMemory();
  int rc;
  Py_BEGIN_ALLOW_THREADS;
  rc = self->is_device ? self->device.get_schema(&self->device, schema) : self->cpu.get_schema(&self->cpu, schema);
  Py_END_ALLOW_THREADS;
  if (rc != 0 || ArrowSchemaIsReleased(schema)) {
    free(schema);
    return rc ? stream_error(self, "get_schema", rc) : PyErr_Format(InvalidArrowError, "get_schema returned a released schema");
  }
  PyObject* capsule = PyCapsule_New(schema, "arrow_schema", schema_capsule_free);
  if (capsule == NULL) {
    schema->release(schema);
    free(schema);
  }
  return capsule;
}

static PyObject* CArrayStream_get_next(CArrayStreamObject* self, PyObject* unused) {
  if (!stream_is_live(self)) return PyErr_Format(PyExc_ValueError, "the stream is released");
  struct ArrowDeviceArray next;
  memset(&next, 0, sizeof next);
  int rc;
  Py_BEGIN_ALLOW_THREADS;
  if (self->is_device) {
    rc = self->device.get_next(&self->device, &next);
  } else {
    rc = self->cpu.get_next(&self->cpu, &next.array);
    next.device_type = ARROW_DEVICE_CPU;
    next.device_id = -1;
  }
  Py_END_ALLOW_THREADS;
  if (rc != 0) return stream_error(self, "get_next", rc);
  if (ArrowArrayIsReleased(&next.array)) Py_RETURN_NONE; /* end of stream */
  if (self->is_device && next.device_type != self->device.device_type) {
    next.array.release(&next.array);
    return PyErr_Format(InvalidArrowError, "get_next returned an array of device type %d from a stream of device type %d",
                        (int)next.device_type, (int)self->device.device_type);
  }
  PyObject* out = hold(&next, NULL);
  if (out == NULL && !ArrowArrayIsReleased(&next.array)) { /* refused: released here, the error kept aside, as the
                                                      producer's release may run Python (ctypes) */
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    next.array.release(&next.array);
    PyErr_Restore(type, value, traceback);
  }
  return out;
}

static PyObject* CArrayStream_release(CArrayStreamObject* self, PyObject* unused) {
  stream_release(self);
  Py_RETURN_NONE;
}

static PyObject* CArrayStream_get_device_type(CArrayStreamObject* self, void* unused) {
  return PyLong_FromLong(self->is_device ? self->device.device_type : ARROW_DEVICE_CPU);
}

static void CArrayStream_dealloc(CArrayStreamObject* self) {
  stream_release(self);
  PyObject_Free(self);
}

static PyMethodDef CArrayStream_methods[] = {
    {"get_schema", (PyCFunction)CArrayStream_get_schema, METH_NOARGS, "a new arrow_schema capsule"},
    {"get_next", (PyCFunction)CArrayStream_get_next, METH_NOARGS, "the next CDeviceArray, or None at the end"},
    {"release", (PyCFunction)CArrayStream_release, METH_NOARGS, "release the stream now"},
    {NULL}};

static PyGetSetDef CArrayStream_getset[] = {
    {"device_type", (getter)CArrayStream_get_device_type, NULL, "ArrowDeviceType of the stream", NULL},
    {NULL}};

PyTypeObject CArrayStreamType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "arrowdev._capsules.CArrayStream",
    .tp_basicsize = sizeof(CArrayStreamObject),
    .tp_dealloc = (destructor)CArrayStream_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An imported ArrowArrayStream or ArrowDeviceArrayStream.",
    .tp_methods = CArrayStream_methods,
    .tp_getset = CArrayStream_getset,
};

PyObject* import_stream(PyObject* module, PyObject* capsule) {
  if (!PyCapsule_CheckExact(capsule)) {
    return PyErr_Format(PyExc_TypeError, "expected a stream PyCapsule, got %.200s", Py_TYPE(capsule)->tp_name);
  }
  const char* name = PyCapsule_GetName(capsule);
  int is_device = name != NULL && strcmp(name, "arrow_device_array_stream") == 0;
  void* src = capsule_struct(capsule, is_device ? "arrow_device_array_stream" : "arrow_array_stream");
  if (src == NULL) return NULL;
  int released = is_device ? ArrowDeviceArrayStreamIsReleased(src) : ArrowArrayStreamIsReleased(src);
  if (released) {
    PyErr_SetString(InvalidArrowError, "the stream was already consumed or released (release is NULL)");
    return NULL;
  }
  int callbacks = is_device ? ((struct ArrowDeviceArrayStream*)src)->get_schema != NULL &&
                                  ((struct ArrowDeviceArrayStream*)src)->get_next != NULL &&
                                  ((struct ArrowDeviceArrayStream*)src)->get_last_error != NULL
                            : ((struct ArrowArrayStream*)src)->get_schema != NULL &&
                                  ((struct ArrowArrayStream*)src)->get_next != NULL &&
                                  ((struct ArrowArrayStream*)src)->get_last_error != NULL;
  if (!callbacks) { /* left in the capsule, whose destructor releases it */
    PyErr_SetString(InvalidArrowError, "malformed stream: get_schema, get_next or get_last_error is NULL");
    return NULL;
  }
  CArrayStreamObject* self = PyObject_New(CArrayStreamObject, &CArrayStreamType);
  if (self == NULL) return NULL;
  self->is_device = is_device;
  memset(&self->cpu, 0, sizeof self->cpu);
  memset(&self->device, 0, sizeof self->device);
  if (is_device) {
    memcpy(&self->device, src, sizeof self->device);
    ArrowDeviceArrayStreamMarkReleased(src);
  } else {
    memcpy(&self->cpu, src, sizeof self->cpu);
    ArrowArrayStreamMarkReleased(src);
  }
  return (PyObject*)self;
}

PyObject* export_stream(PyObject* module, PyObject* args) {
  PyObject *schema_capsule, *arrays;
  int device;
  int device_type = ARROW_DEVICE_CPU;
  if (!PyArg_ParseTuple(args, "OOp|i", &schema_capsule, &arrays, &device, &device_type)) return NULL;
  struct ArrowSchema* schema = capsule_struct(schema_capsule, "arrow_schema");
  if (schema == NULL) return NULL;
  if (ArrowSchemaIsReleased(schema)) return PyErr_Format(PyExc_ValueError, "the schema capsule was already consumed");
  Py_ssize_t n;
  Container** held = containers_of(arrays, &n);
  if (held == NULL) return NULL;
  struct ArrowDeviceArray* exported = calloc(n > 0 ? (size_t)n : 1, sizeof *exported);
  int rc = exported == NULL ? ENOMEM : 0;
  for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
    const struct ArrowArray* a = &held[i]->array.array;
    rc = container_export(held[i], a->offset, a->length, container_top_null_count(held[i]), &exported[i]);
    for (Py_ssize_t j = 0; rc && j < i; j++) exported[j].array.release(&exported[j].array);
  }
  free(held);
  if (rc) {
    free(exported);
    return PyErr_NoMemory();
  }
  /* From here the stream owns the schema (moved out of the capsule) and the exports. */
  PyObject* capsule = NULL;
  if (device) {
    struct ArrowDeviceArrayStream* out = malloc(sizeof *out);
    if (out != NULL && export_device_stream(schema, exported, n, device_type, out) == 0) {
      capsule = PyCapsule_New(out, "arrow_device_array_stream", device_stream_capsule_free);
      if (capsule == NULL) out->release(out);
    }
    if (capsule == NULL) free(out);
  } else {
    struct ArrowArrayStream* out = malloc(sizeof *out);
    if (out != NULL && export_array_stream(schema, exported, n, out) == 0) {
      capsule = PyCapsule_New(out, "arrow_array_stream", stream_capsule_free);
      if (capsule == NULL) out->release(out);
    }
    if (capsule == NULL) free(out);
  }
  if (capsule == NULL) {
    for (Py_ssize_t i = 0; i < n; i++) {
      ArrowArrayReleaseIfLive(&exported[i].array);
    }
    ArrowSchemaReleaseIfLive(schema);
    if (!PyErr_Occurred()) PyErr_NoMemory();
  }
  free(exported);
  return capsule;
}
