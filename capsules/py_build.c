/* arrowdev._capsules, build: arrays of arrowdev's own, made from buffer addresses and held arrays,
 * checked against their type before anyone sees them (see py_build.h for the layer). The node is
 * made by the core (build_array, container.c); what it keeps alive is the caller's keepalive.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "container.h"
#include "py_array.h"
#include "py_build.h"
#include "py_types.h"
#include "released.h"

/* The addresses in a sequence of ints as a new C array (*n of them), or NULL with an exception. */
static const void** addresses_of(PyObject* seq, Py_ssize_t* n) {
  PyObject* fast = PySequence_Fast(seq, "expected a sequence of int buffer addresses");
  if (fast == NULL) return NULL;
  *n = PySequence_Fast_GET_SIZE(fast);
  const void** addrs = calloc(*n > 0 ? (size_t)*n : 1, sizeof(void*));
  if (addrs == NULL) PyErr_NoMemory();
  for (Py_ssize_t i = 0; addrs != NULL && i < *n; i++) {
    addrs[i] = PyLong_AsVoidPtr(PySequence_Fast_GET_ITEM(fast, i));
    if (PyErr_Occurred()) {
      free(addrs);
      addrs = NULL;
    }
  }
  Py_DECREF(fast);
  return addrs;
}

/* The arguments of build that need no tree to be checked: ValueError / TypeError when wrong. */
static int build_args_check(long long length, long long null_count, long long offset, PyObject* dictionary) {
  if (length < 0 || offset < 0 || null_count < -1 || null_count > length) {
    PyErr_Format(PyExc_ValueError,
                 "expected length >= 0, offset >= 0 and -1 <= null_count <= length, got length %lld, offset %lld, "
                 "null_count %lld", length, offset, null_count);
    return -1;
  }
  if (dictionary != Py_None && !PyObject_TypeCheck(dictionary, &CDeviceArrayType)) {
    PyErr_Format(PyExc_TypeError, "expected a CDeviceArray or None as dictionary, got %.200s", Py_TYPE(dictionary)->tp_name);
    return -1;
  }
  return 0;
}

/* Makes the node, then checks it against the type before anyone sees it (buffer and child counts
 * per format, dictionary, null count, child lengths; no memory is read): 0, or -1 with the node
 * released and ValueError set. */
static int build_checked(const struct ArrowSchema* schema, long long length, long long null_count, long long offset,
                         Py_ssize_t n_buffers, const void** addrs, Py_ssize_t n_children, Container** kids,
                         Container* dict, PyObject* keepalive, struct ArrowArray* out) {
  Py_XINCREF(keepalive);
  if (build_array(length, null_count, offset, n_buffers, addrs, n_children, kids, dict, keepalive, out)) {
    Py_XDECREF(keepalive);
    PyErr_NoMemory();
    return -1;
  }
  char err[1200];
  if (check_against_schema(out, schema, 0, err, sizeof err) == 0) return 0;
  ArrowArrayReleaseIfLive(out); /* lets the keepalive go too */
  PyErr_Format(PyExc_ValueError, "expected an array that fits its type '%.100s', got one that does not: %s",
               schema->format, err);
  return -1;
}

PyObject* build(PyObject* module, PyObject* args, PyObject* kwargs) {
  static char* kwlist[] = {"dtype", "length", "null_count", "offset", "buffers", "children", "dictionary",
                           "device_type", "device_id", "keepalive", "sync_event", NULL};
  long long length, null_count, offset, device_id = -1;
  int device_type = ARROW_DEVICE_CPU;
  PyObject *dtype, *buffers, *children, *dictionary = Py_None, *keepalive = Py_None, *sync_event = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OLLLOO|OiLOO", kwlist, &dtype, &length, &null_count, &offset,
                                   &buffers, &children, &dictionary, &device_type, &device_id, &keepalive,
                                   &sync_event)) {
    return NULL;
  }
  const struct ArrowSchema* schema = type_schema(dtype);
  if (schema == NULL || build_args_check(length, null_count, offset, dictionary)) return NULL;
  void* event = sync_event == Py_None ? NULL : PyLong_AsVoidPtr(sync_event);
  if (PyErr_Occurred()) return NULL;
  Py_ssize_t n_buffers = 0, n_children = 0;
  const void** addrs = addresses_of(buffers, &n_buffers);
  Container** kids = addrs != NULL ? containers_of(children, &n_children) : NULL;
  struct ArrowDeviceArray made;
  memset(&made, 0, sizeof made);
  Container* dict = dictionary == Py_None ? NULL : ((CDeviceArrayObject*)dictionary)->container;
  int rc = kids != NULL ? build_checked(schema, length, null_count, offset, n_buffers, addrs, n_children, kids, dict,
                                        keepalive == Py_None ? NULL : keepalive, &made.array)
                        : -1;
  free(addrs);
  free(kids);
  if (rc) return NULL;
  made.device_type = device_type;
  made.device_id = device_id;
  made.sync_event = event;
  PyObject* out = hold(&made, NULL);
  if (out == NULL) ArrowArrayReleaseIfLive(&made.array);
  return out != NULL ? with_type_of(out, dtype, schema) : NULL;
}
