/* arrowdev._capsules.CDeviceArray: one container (container.c) seen from Python, its top node's
 * fields, slices, children and exports as PyCapsules; and hold, by which every tree arrowdev
 * imports or builds becomes one (see py_array.h for the layer).
 *
 * Every hold checks the tree before it moves it (C9, docs/architecture.md): on a bad tree nothing is
 * moved, the producer's capsule stays usable, and its destructor releases it as usual.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "container.h"
#include "py_array.h"
#include "py_capsule.h"
#include "py_types.h"
#include "released.h"

PyObject* wrap_container(Container* c, PyObject* dtype, const struct ArrowSchema* schema) {
  CDeviceArrayObject* self = PyObject_New(CDeviceArrayObject, &CDeviceArrayType);
  if (self == NULL) {
    container_decref(c);
    return NULL;
  }
  self->container = c;
  self->dtype = dtype != NULL ? Py_NewRef(dtype) : NULL;
  self->schema = dtype != NULL ? schema : NULL;
  return (PyObject*)self;
}

PyObject* with_type_of(PyObject* held, PyObject* dtype, const struct ArrowSchema* schema) {
  CDeviceArrayObject* self = (CDeviceArrayObject*)held;
  Py_XSETREF(self->dtype, Py_NewRef(dtype));
  self->schema = schema;
  return held;
}

/* ---- holding: checked, then moved ----------------------------------------------------------- */

/* 1 when the CPU may read the array's buffers now: CPU memory with no event to wait for. */
static int host_readable(const struct ArrowDeviceArray* a) {
  return a->device_type == ARROW_DEVICE_CPU && a->sync_event == NULL;
}

/* 0 when *src may be held: not released, a well-formed tree with sane device fields and, when
 * schema is given (already through schema_check), a tree that fits it; else -1 with
 * InvalidArrowError naming the problem (C9). */
static int check_holdable(const struct ArrowDeviceArray* src, const struct ArrowSchema* schema) {
  char err[1200];
  if (ArrowArrayIsReleased(&src->array)) {
    PyErr_SetString(InvalidArrowError, "the array was already consumed or released (release is NULL)");
    return -1;
  }
  if (arrow_array_check(&src->array, err, sizeof err) != 0 || device_fields_check(src, err, sizeof err) != 0) {
    PyErr_Format(InvalidArrowError, "malformed ArrowArray: %s", err);
    return -1;
  }
  if (schema != NULL && check_against_schema(&src->array, schema, host_readable(src), err, sizeof err) != 0) {
    PyErr_Format(InvalidArrowError, "array does not fit its schema: %s", err);
    return -1;
  }
  return 0;
}

static PyObject* move_in(struct ArrowDeviceArray* src, PyObject* keepalive) {
  Py_XINCREF(keepalive);
  Container* c = container_move_from(src, keepalive);
  if (c == NULL) {
    Py_XDECREF(keepalive);
    return PyErr_NoMemory();
  }
  return wrap_container(c, NULL, NULL);
}

PyObject* hold(struct ArrowDeviceArray* src, PyObject* keepalive) {
  return check_holdable(src, NULL) ? NULL : move_in(src, keepalive);
}

PyObject* hold_fitting(struct ArrowDeviceArray* src, const struct ArrowSchema* schema) {
  return check_holdable(src, schema) ? NULL : move_in(src, NULL);
}

/* ---- CDeviceArray --------------------------------------------------------------------------- */

static void CDeviceArray_dealloc(CDeviceArrayObject* self) {
  if (self->container != NULL) container_decref(self->container);
  Py_XDECREF(self->dtype);
  PyObject_Free(self);
}

static const struct ArrowArray* top(CDeviceArrayObject* self) { return &self->container->array.array; }

static PyObject* CDeviceArray_get_int(CDeviceArrayObject* self, void* which) {
  const struct ArrowDeviceArray* a = &self->container->array;
  switch ((intptr_t)which) {
    case 0: return PyLong_FromLongLong(a->array.length);
    case 1: return PyLong_FromLongLong(a->array.offset);
    case 2: return PyLong_FromLongLong(container_top_null_count(self->container));
    case 3: return PyLong_FromLongLong(a->array.n_buffers);
    case 4: return PyLong_FromLongLong(a->array.n_children);
    case 5: return PyBool_FromLong(a->array.dictionary != NULL);
    case 6: return PyLong_FromLong(a->device_type);
    case 7: return PyLong_FromLongLong(a->device_id);
    case 8: return PyLong_FromVoidPtr(a->sync_event);
    case 9: return PyLong_FromLongLong(atomic_load(&self->container->refs));
    default: Py_RETURN_NONE;
  }
}

static PyObject* CDeviceArray_get_buffers(CDeviceArrayObject* self, void* unused) {
  const struct ArrowArray* a = top(self);
  PyObject* out = PyTuple_New(a->n_buffers);
  for (int64_t i = 0; out != NULL && i < a->n_buffers; i++) {
    PyObject* addr = PyLong_FromVoidPtr((void*)a->buffers[i]);
    if (addr == NULL) Py_CLEAR(out);
    else PyTuple_SET_ITEM(out, i, addr);
  }
  return out;
}

/* (length, offset, null_count, buffers, children, dictionary) for a node and, nested, for every
 * node below it: one call gives Python the whole shape of a tree without exporting anything.
 * null_count is what an export of the node carries (C6); *index is the node's number in tree order. */
static PyObject* node_tree(const Container* c, const struct ArrowArray* a, int64_t* index) {
  int64_t null_count = a->null_count < 0 && c->null_counts != NULL ? c->null_counts[*index] : a->null_count;
  *index += 1;
  PyObject* buffers = PyTuple_New(a->n_buffers);
  PyObject* children = PyTuple_New(a->n_children);
  PyObject* dictionary = NULL;
  if (buffers == NULL || children == NULL) goto fail;
  for (int64_t i = 0; i < a->n_buffers; i++) {
    PyObject* addr = PyLong_FromVoidPtr((void*)a->buffers[i]);
    if (addr == NULL) goto fail;
    PyTuple_SET_ITEM(buffers, i, addr);
  }
  for (int64_t i = 0; i < a->n_children; i++) {
    PyObject* child = node_tree(c, a->children[i], index);
    if (child == NULL) goto fail;
    PyTuple_SET_ITEM(children, i, child);
  }
  if (a->dictionary != NULL) {
    dictionary = node_tree(c, a->dictionary, index);
    if (dictionary == NULL) goto fail;
  } else {
    dictionary = Py_NewRef(Py_None);
  }
  return Py_BuildValue("(LLLNNN)", (long long)a->length, (long long)a->offset, (long long)null_count,
                       buffers, children, dictionary);
fail:
  Py_XDECREF(buffers);
  Py_XDECREF(children);
  Py_XDECREF(dictionary);
  return NULL;
}

static PyObject* CDeviceArray_tree(CDeviceArrayObject* self, PyObject* unused) {
  int64_t index = 0;
  return node_tree(self->container, top(self), &index);
}

/* with_type(dtype): the same container as a new array of type dtype (a DataType), after checking
 * that the tree fits it (InvalidArrowError otherwise): how an array read from a stream, or
 * imported without its schema, gets its type. */
static PyObject* CDeviceArray_with_type(CDeviceArrayObject* self, PyObject* dtype) {
  const struct ArrowSchema* schema = type_schema(dtype);
  if (schema == NULL) return NULL;
  char err[1200];
  if (check_against_schema(top(self), schema, host_readable(&self->container->array), err, sizeof err) != 0) {
    PyErr_Format(InvalidArrowError, "array does not fit its schema: %s", err);
    return NULL;
  }
  container_incref(self->container);
  return wrap_container(self->container, dtype, schema);
}

static PyObject* CDeviceArray_get_dtype(CDeviceArrayObject* self, void* unused) {
  return Py_NewRef(self->dtype != NULL ? self->dtype : Py_None);
}

/* Exports, then holds the export in a new container of type dtype (NULL: untyped) whose schema
 * is schema: how slices, children and the dictionary become arrays of their own that keep this
 * container alive. */
static PyObject* hold_export(struct ArrowDeviceArray* exported, int rc, PyObject* dtype,
                             const struct ArrowSchema* schema) {
  if (rc) return PyErr_NoMemory();
  PyObject* out = hold(exported, NULL);
  if (out == NULL) ArrowArrayReleaseIfLive(&exported->array);
  return out != NULL && dtype != NULL ? with_type_of(out, dtype, schema) : out;
}

/* The type of child i (i >= 0) or of the dictionary (i == -1) of a typed array, a new reference;
 * NULL when the array is untyped, or with an exception. */
static PyObject* node_type(CDeviceArrayObject* self, long long i) {
  if (self->dtype == NULL) return NULL;
  if (i < 0) {
    PyObject* value_type = PyObject_GetAttrString(self->dtype, "value_type");
    if (value_type == Py_None) Py_CLEAR(value_type);
    return value_type;
  }
  PyObject* children = PyObject_GetAttrString(self->dtype, "children");
  if (children == NULL) return NULL;
  PyObject* child = PySequence_GetItem(children, (Py_ssize_t)i);
  Py_DECREF(children);
  return child;
}

static PyObject* CDeviceArray_slice(CDeviceArrayObject* self, PyObject* args) {
  long long offset, length, null_count = -1;
  if (!PyArg_ParseTuple(args, "LL|L", &offset, &length, &null_count)) return NULL;
  if (offset < 0 || length < 0 || null_count < -1) {
    PyErr_Format(PyExc_ValueError, "expected offset >= 0, length >= 0, null_count >= -1, got %lld, %lld, %lld",
                 offset, length, null_count);
    return NULL;
  }
  struct ArrowDeviceArray exported;
  int rc = container_export(self->container, offset, length, null_count, &exported);
  return hold_export(&exported, rc, self->dtype, self->schema);
}

/* Child i (or the dictionary, i == -1) as an array of its own, of the child's type when this
 * array has one. */
static PyObject* export_child(CDeviceArrayObject* self, long long i) {
  PyObject* dtype = node_type(self, i);
  const struct ArrowSchema* schema = dtype != NULL ? type_schema(dtype) : NULL;
  if ((dtype == NULL && PyErr_Occurred()) || (dtype != NULL && schema == NULL)) {
    Py_XDECREF(dtype);
    return NULL;
  }
  struct ArrowDeviceArray exported;
  PyObject* out = hold_export(&exported, container_export_child(self->container, i, &exported), dtype, schema);
  Py_XDECREF(dtype);
  return out;
}

static PyObject* CDeviceArray_child(CDeviceArrayObject* self, PyObject* arg) {
  long long i = PyLong_AsLongLong(arg);
  if (i == -1 && PyErr_Occurred()) return NULL;
  if (i < 0 || i >= top(self)->n_children) {
    PyErr_Format(PyExc_IndexError, "child index %lld out of range for %lld children", i,
                 (long long)top(self)->n_children);
    return NULL;
  }
  return export_child(self, i);
}

static PyObject* CDeviceArray_dictionary(CDeviceArrayObject* self, PyObject* unused) {
  if (top(self)->dictionary == NULL) Py_RETURN_NONE;
  return export_child(self, -1);
}

/* A new arrow_device_array (device) or arrow_array capsule exporting the top node with this
 * null count (-1: the node's own, or the one arrowdev computed). */
static PyObject* export_capsule(CDeviceArrayObject* self, long long null_count, int device) {
  if (null_count < 0) null_count = container_top_null_count(self->container);
  struct ArrowDeviceArray* out = malloc(sizeof *out);
  if (out == NULL) return PyErr_NoMemory();
  const struct ArrowArray* a = top(self);
  if (container_export(self->container, a->offset, a->length, null_count, out)) {
    free(out);
    return PyErr_NoMemory();
  }
  /* an arrow_array capsule holds the ArrowArray at the start of the device struct: same block */
  PyObject* capsule = device ? PyCapsule_New(out, "arrow_device_array", device_array_capsule_free)
                             : PyCapsule_New(&out->array, "arrow_array", array_capsule_free);
  if (capsule == NULL) {
    out->array.release(&out->array);
    free(out);
  }
  return capsule;
}

static PyObject* export_with_args(CDeviceArrayObject* self, PyObject* args, int device) {
  long long null_count = -1;
  if (!PyArg_ParseTuple(args, "|L", &null_count)) return NULL;
  return export_capsule(self, null_count, device);
}

static PyObject* CDeviceArray_export_device(CDeviceArrayObject* self, PyObject* args) {
  return export_with_args(self, args, 1);
}

static PyObject* CDeviceArray_export_array(CDeviceArrayObject* self, PyObject* args) {
  return export_with_args(self, args, 0);
}

/* The (schema, array) capsule pair of the array protocols for a held array: a copy of the schema
 * and an export of the top node with this null count (-1: its own); None when a node's null count
 * is -1 and not computed yet (the caller computes them, set_null_counts, and asks again; C6). */
PyObject* export_pair_of(CDeviceArrayObject* self, const struct ArrowSchema* schema, int device,
                         long long null_count) {
  if (container_needs_null_counts(self->container)) Py_RETURN_NONE;
  PyObject* schema_capsule = schema_capsule_copy(schema);
  if (schema_capsule == NULL) return NULL;
  PyObject* array = export_capsule(self, null_count, device);
  if (array == NULL) {
    Py_DECREF(schema_capsule);
    return NULL;
  }
  PyObject* pair = PyTuple_New(2);
  if (pair == NULL) {
    Py_DECREF(schema_capsule);
    Py_DECREF(array);
    return NULL;
  }
  PyTuple_SET_ITEM(pair, 0, schema_capsule);
  PyTuple_SET_ITEM(pair, 1, array);
  return pair;
}

/* export_pair(device, null_count=-1, dtype=None): export_pair_of in one call, the hot path of
 * every export from Python; the schema is the array's own type's, or dtype's when given (a
 * column's type, which may name the field otherwise). */
static PyObject* CDeviceArray_export_pair(CDeviceArrayObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 1 || nargs > 3) {
    return PyErr_Format(PyExc_TypeError, "export_pair expected 1 to 3 arguments, got %zd", nargs);
  }
  int device = PyObject_IsTrue(args[0]);
  long long null_count = nargs >= 2 ? PyLong_AsLongLong(args[1]) : -1;
  if (device < 0 || (null_count == -1 && PyErr_Occurred())) return NULL;
  const struct ArrowSchema* schema = self->schema;
  if (nargs == 3 && args[2] != Py_None) {
    if ((schema = type_schema(args[2])) == NULL) return NULL;
  } else if (schema == NULL) {
    return PyErr_Format(PyExc_TypeError, "expected a DataType to export an array that carries none, got None");
  }
  return export_pair_of(self, schema, device, null_count);
}

static PyObject* CDeviceArray_needs_null_counts(CDeviceArrayObject* self, void* unused) {
  return PyBool_FromLong(container_needs_null_counts(self->container));
}

/* The null counts in a Python sequence as a new C array of exactly `expected` of them, or NULL
 * with an exception set. */
static int64_t* null_counts_from(PyObject* seq, int64_t expected) {
  PyObject* fast = PySequence_Fast(seq, "expected a sequence of null counts");
  if (fast == NULL) return NULL;
  int64_t* counts = NULL;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  if (n != expected) {
    PyErr_Format(PyExc_ValueError, "expected %lld null counts (one per node), got %zd", (long long)expected, n);
  } else if ((counts = malloc((size_t)(n > 0 ? n : 1) * sizeof *counts)) == NULL) {
    PyErr_NoMemory();
  }
  for (Py_ssize_t i = 0; counts != NULL && i < n; i++) {
    counts[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
    if (counts[i] < -1 && !PyErr_Occurred()) {
      PyErr_Format(PyExc_ValueError, "expected null counts >= -1, got %lld", (long long)counts[i]);
    }
    if (PyErr_Occurred()) {
      free(counts);
      counts = NULL;
    }
  }
  Py_DECREF(fast);
  return counts;
}

/* set_null_counts(counts): one count per node in tree order (top, children's subtrees, dictionary's),
 * -1 where unknown; exports carry them where the producer's nodes say -1 (C6). Once per array. */
static PyObject* CDeviceArray_set_null_counts(CDeviceArrayObject* self, PyObject* arg) {
  int64_t* counts = null_counts_from(arg, tree_size(top(self)));
  if (counts == NULL) return NULL;
  if (container_set_null_counts(self->container, counts) != 0) {
    return PyErr_Format(PyExc_ValueError, "the array's null counts were set already");
  }
  Py_RETURN_NONE;
}

static PyObject* CDeviceArray_repr(CDeviceArrayObject* self) {
  const struct ArrowDeviceArray* a = &self->container->array;
  return PyUnicode_FromFormat("<CDeviceArray length=%lld offset=%lld null_count=%lld n_buffers=%lld "
                              "n_children=%lld device_type=%d device_id=%lld>",
                              (long long)a->array.length, (long long)a->array.offset,
                              (long long)a->array.null_count, (long long)a->array.n_buffers,
                              (long long)a->array.n_children, (int)a->device_type,
                              (long long)a->device_id);
}

static PyGetSetDef CDeviceArray_getset[] = {
    {"length", (getter)CDeviceArray_get_int, NULL, "length of the top node", (void*)0},
    {"offset", (getter)CDeviceArray_get_int, NULL, "offset of the top node", (void*)1},
    {"null_count", (getter)CDeviceArray_get_int, NULL,
     "null_count of the top node as exports carry it: the producer's, else a computed one, else -1", (void*)2},
    {"n_buffers", (getter)CDeviceArray_get_int, NULL, NULL, (void*)3},
    {"n_children", (getter)CDeviceArray_get_int, NULL, NULL, (void*)4},
    {"has_dictionary", (getter)CDeviceArray_get_int, NULL, NULL, (void*)5},
    {"device_type", (getter)CDeviceArray_get_int, NULL, "ArrowDeviceType code", (void*)6},
    {"device_id", (getter)CDeviceArray_get_int, NULL, NULL, (void*)7},
    {"sync_event", (getter)CDeviceArray_get_int, NULL, "address of the producer's event, 0 if none", (void*)8},
    {"refcount", (getter)CDeviceArray_get_int, NULL, "container references (for tests)", (void*)9},
    {"buffers", (getter)CDeviceArray_get_buffers, NULL, "buffer addresses of the top node", NULL},
    {"dtype", (getter)CDeviceArray_get_dtype, NULL, "the array's DataType, or None when it was imported without one",
     NULL},
    {"needs_null_counts", (getter)CDeviceArray_needs_null_counts, NULL,
     "True when a node has null_count -1 and set_null_counts was not called yet", NULL},
    {NULL}};

static PyMethodDef CDeviceArray_methods[] = {
    {"slice", (PyCFunction)CDeviceArray_slice, METH_VARARGS,
     "slice(offset, length, null_count=-1): a new array over the same buffers with this top offset"},
    {"tree", (PyCFunction)CDeviceArray_tree, METH_NOARGS,
     "(length, offset, null_count, buffers, children, dictionary), nested for every node"},
    {"with_type", (PyCFunction)CDeviceArray_with_type, METH_O,
     "with_type(dtype): the same container as an array of this DataType; InvalidArrowError unless the tree fits it"},
    {"child", (PyCFunction)CDeviceArray_child, METH_O, "child(i): child node i as an array of its own"},
    {"dictionary", (PyCFunction)CDeviceArray_dictionary, METH_NOARGS, "the dictionary node, or None"},
    {"export_device", (PyCFunction)CDeviceArray_export_device, METH_VARARGS,
     "export_device(null_count=-1): a new arrow_device_array capsule (null_count >= 0 overrides)"},
    {"export_array", (PyCFunction)CDeviceArray_export_array, METH_VARARGS,
     "export_array(null_count=-1): a new arrow_array capsule (the caller checks that the memory "
     "is CPU-readable)"},
    {"export_pair", (PyCFunction)(void (*)(void))CDeviceArray_export_pair, METH_FASTCALL,
     "export_pair(device, null_count=-1, dtype=None): (schema, array) capsules; the schema is a copy "
     "of the array's type's (or dtype's, a DataType), the array an arrow_device_array (device true) or "
     "arrow_array capsule. None when null counts are to be computed first"},
    {"set_null_counts", (PyCFunction)CDeviceArray_set_null_counts, METH_O,
     "set_null_counts(counts): null counts for the nodes whose producer said -1, one per node in "
     "tree order (-1 where unknown); exports carry them. Once per array"},
    {NULL}};

PyTypeObject CDeviceArrayType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "arrowdev._capsules.CDeviceArray",
    .tp_basicsize = sizeof(CDeviceArrayObject),
    .tp_dealloc = (destructor)CDeviceArray_dealloc,
    .tp_repr = (reprfunc)CDeviceArray_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One held ArrowDeviceArray (a shared-ownership container).",
    .tp_getset = CDeviceArray_getset,
    .tp_methods = CDeviceArray_methods,
};

/* A sequence of CDeviceArray as a new array of containers (borrowed), or NULL with an error. */
Container** containers_of(PyObject* seq, Py_ssize_t* n) {
  PyObject* fast = PySequence_Fast(seq, "children must be a sequence of CDeviceArray");
  if (fast == NULL) return NULL;
  *n = PySequence_Fast_GET_SIZE(fast);
  Container** out = calloc(*n > 0 ? (size_t)*n : 1, sizeof(Container*));
  for (Py_ssize_t i = 0; out != NULL && i < *n; i++) {
    PyObject* item = PySequence_Fast_GET_ITEM(fast, i);
    if (!PyObject_TypeCheck(item, &CDeviceArrayType)) {
      PyErr_Format(PyExc_TypeError, "expected CDeviceArray items, got %.200s", Py_TYPE(item)->tp_name);
      free(out);
      out = NULL;
      break;
    }
    out[i] = ((CDeviceArrayObject*)item)->container;
  }
  if (out == NULL && !PyErr_Occurred()) PyErr_NoMemory();
  Py_DECREF(fast);
  return out;
}
