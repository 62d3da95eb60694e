/* arrowdev._capsules.ColumnCore: the native half of arrowdev.ArrowColumn (arrowdev/column.py).
 *
 * ArrowColumn is a Python subclass of ColumnCore. The core holds what every column has, a type
 * (_type, a DataType), its chunks (_chunks, a list of CDeviceArray) and the per-chunk null counts
 * Python has computed (_nulls, or None), plus the address of the type's ArrowSchema, kept with the
 * type (the DataType keeps that schema alive, and we keep the DataType). Everything else about a
 * column is Python. See py_column.h for the layer.
 *
 * What is native is the hot path of the exchange (benchmarks/bench_exchange.py), nothing more:
 * - column_from makes a column of one chunk straight from an import (import_from, py_import.c),
 *   without running Python.
 * - __arrow_c_device_array__ / __arrow_c_array__ with no requested schema and no keyword argument,
 *   for a column of one chunk whose exports already carry computed null counts (C6) and, for the
 *   CPU protocol, whose data the CPU can read now (CPU memory, no sync event), export in one call:
 *   the same export_pair_of that CDeviceArray.export_pair runs. Everything else (requested
 *   schemas, keyword arguments, null counts to compute, several chunks, host copies) goes to the
 *   Python methods _arrow_c_device_array / _arrow_c_array, unchanged.
 * - Pinned host memory (CUDA_HOST, ROCM_HOST) is CPU memory: its device exports go to Python too,
 *   which waits on the sync event and labels them ARROW_DEVICE_CPU, since CPU-only consumers
 *   (PyArrow's wheels) refuse the host labels.
 */
#include <stddef.h>

#include "py_array.h"
#include "py_column.h"
#include "py_types.h"

#include <structmember.h>

/* The ArrowSchema of a DataType (py_types.c), or NULL (no exception) when it has none: the
 * exports then take the Python path, which says what is wrong. */
static const struct ArrowSchema* schema_of(PyObject* dtype) {
  const struct ArrowSchema* schema = type_schema(dtype);
  if (schema == NULL) PyErr_Clear();
  return schema;
}

PyObject* column_from(PyTypeObject* type, PyObject* dtype, const struct ArrowSchema* schema, PyObject* held) {
  PyObject* chunks = PyList_New(1);
  if (chunks == NULL) return NULL;
  ColumnObject* self = (ColumnObject*)type->tp_alloc(type, 0);
  if (self == NULL) {
    Py_DECREF(chunks);
    return NULL;
  }
  PyList_SET_ITEM(chunks, 0, Py_NewRef(held));
  self->type = Py_NewRef(dtype);
  self->chunks = chunks;
  self->schema = schema;
  return (PyObject*)self;
}

static int Column_traverse(ColumnObject* self, visitproc visit, void* arg) {
  Py_VISIT(self->type);
  Py_VISIT(self->chunks);
  Py_VISIT(self->nulls);
  return 0;
}

static int Column_clear(ColumnObject* self) {
  self->schema = NULL;
  Py_CLEAR(self->type);
  Py_CLEAR(self->chunks);
  Py_CLEAR(self->nulls);
  return 0;
}

static void Column_dealloc(ColumnObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  PyObject_GC_UnTrack(self);
  if (self->weakrefs != NULL) PyObject_ClearWeakRefs((PyObject*)self);
  Column_clear(self);
  type->tp_free((PyObject*)self); /* a subclass's own dealloc drops its reference to the type */
}

static PyObject* Column_get_type(ColumnObject* self, void* unused) {
  return Py_NewRef(self->type != NULL ? self->type : Py_None);
}

/* Setting _type also sets the schema the native exports use. */
static int Column_set_type(ColumnObject* self, PyObject* value, void* unused) {
  if (value == NULL) {
    PyErr_SetString(PyExc_AttributeError, "a column's type cannot be deleted");
    return -1;
  }
  self->schema = schema_of(value);
  Py_XSETREF(self->type, Py_NewRef(value));
  return 0;
}

/* The CDeviceArray of a column of exactly one, or NULL (no exception). */
static CDeviceArrayObject* only_chunk(ColumnObject* self) {
  if (self->chunks == NULL || !PyList_CheckExact(self->chunks) || PyList_GET_SIZE(self->chunks) != 1) return NULL;
  PyObject* chunk = PyList_GET_ITEM(self->chunks, 0);
  return Py_IS_TYPE(chunk, &CDeviceArrayType) ? (CDeviceArrayObject*)chunk : NULL;
}

/* Memory the CPU reads in place under a label other than CPU: exported as CPU by Python. */
static int is_host_label(ArrowDeviceType device_type) {
  return device_type == ARROW_DEVICE_CUDA_HOST || device_type == ARROW_DEVICE_ROCM_HOST;
}

/* The exports: the native path when it applies (see the top of this file), else the Python method
 * `fallback` with the same arguments. */
static PyObject* export_or_fallback(ColumnObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                                    int device, const char* fallback) {
  if (kwnames == NULL && (nargs == 0 || (nargs == 1 && args[0] == Py_None)) && self->schema != NULL) {
    CDeviceArrayObject* chunk = only_chunk(self);
    const struct ArrowDeviceArray* a = chunk != NULL ? &chunk->container->array : NULL;
    int native = device ? !is_host_label(a != NULL ? a->device_type : ARROW_DEVICE_CPU)
                        : a != NULL && a->device_type == ARROW_DEVICE_CPU && a->sync_event == NULL;
    if (a != NULL && native) {
      PyObject* pair = export_pair_of(chunk, self->schema, device, -1);
      if (pair != Py_None) return pair; /* the pair, or NULL with an exception */
      Py_DECREF(pair); /* null counts to compute first: Python does that */
    }
  }
  PyObject* method = PyObject_GetAttrString((PyObject*)self, fallback);
  if (method == NULL) return NULL;
  PyObject* out = PyObject_Vectorcall(method, args, nargs, kwnames);
  Py_DECREF(method);
  return out;
}

static PyObject* Column_arrow_c_device_array(ColumnObject* self, PyObject* const* args, Py_ssize_t nargs,
                                             PyObject* kwnames) {
  return export_or_fallback(self, args, nargs, kwnames, 1, "_arrow_c_device_array");
}

static PyObject* Column_arrow_c_array(ColumnObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return export_or_fallback(self, args, nargs, kwnames, 0, "_arrow_c_array");
}

static PyMemberDef Column_members[] = {
    {"_chunks", T_OBJECT, offsetof(ColumnObject, chunks), 0, "the chunks: a list of CDeviceArray"},
    {"_nulls", T_OBJECT, offsetof(ColumnObject, nulls), 0,
     "per chunk, its null count where known (None: to be counted); None until first needed"},
    {NULL}};

static PyGetSetDef Column_getset[] = {
    {"_type", (getter)Column_get_type, (setter)Column_set_type, "the column's DataType", NULL},
    {NULL}};

static PyMethodDef Column_methods[] = {
    {"__arrow_c_device_array__", (PyCFunction)(void (*)(void))Column_arrow_c_device_array,
     METH_FASTCALL | METH_KEYWORDS,
     "__arrow_c_device_array__(requested_schema=None, **kwargs): (schema, device array) capsules; "
     "never copies unless a cheap cast is requested; pinned host memory is exported as CPU memory"},
    {"__arrow_c_array__", (PyCFunction)(void (*)(void))Column_arrow_c_array, METH_FASTCALL | METH_KEYWORDS,
     "__arrow_c_array__(requested_schema=None, **kwargs): (schema, array) capsules; device data is "
     "copied to host first (C8)"},
    {NULL}};

PyTypeObject ColumnCoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "arrowdev._capsules.ColumnCore",
    .tp_basicsize = sizeof(ColumnObject),
    .tp_dealloc = (destructor)Column_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The native half of arrowdev.ArrowColumn: type, chunks, null counts, the hot exports.",
    .tp_traverse = (traverseproc)Column_traverse,
    .tp_clear = (inquiry)Column_clear,
    .tp_weaklistoffset = offsetof(ColumnObject, weakrefs),
    .tp_members = Column_members,
    .tp_getset = Column_getset,
    .tp_methods = Column_methods,
    .tp_new = PyType_GenericNew,
};
