/* py_array: CDeviceArray, one container (container.c) seen from Python with its type when it has
 * one: how a checked tree is held (hold), typed (with_type_of), sliced, split into children and
 * exported (export_pair_of, the hot path of every export).
 *
 * Layer: above py_types (a held array's type is a DataType) and py_capsule (its exports are
 * capsules); below py_build, py_column, py_import and py_stream, which all make or read held
 * arrays. */
#ifndef ARROWDEV_CAPSULES_PY_ARRAY_H
#define ARROWDEV_CAPSULES_PY_ARRAY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "container.h"

/* One container seen from Python, with its type when it has one: a built array always has it
 * (build takes a DataType), an imported one once its schema is known (import_pair, with_type). */
typedef struct {
  PyObject_HEAD Container* container;
  PyObject* dtype;                  /* its DataType, or NULL for an array imported without a schema */
  const struct ArrowSchema* schema; /* dtype's ArrowSchema (dtype keeps it alive), or NULL */
} CDeviceArrayObject;

extern PyTypeObject CDeviceArrayType;

/* A new CDeviceArray owning the reference c (dropped on failure), of type dtype (may be NULL:
 * untyped) whose ArrowSchema is schema. */
PyObject* wrap_container(Container* c, PyObject* dtype, const struct ArrowSchema* schema);

/* Gives a new, untyped CDeviceArray (held, returned) the type dtype with ArrowSchema schema. */
PyObject* with_type_of(PyObject* held, PyObject* dtype, const struct ArrowSchema* schema);

/* Checks *src, then moves it into a new, untyped CDeviceArray that keeps keepalive (may be NULL)
 * alive; on a bad tree nothing is moved (C9) and InvalidArrowError is set. */
PyObject* hold(struct ArrowDeviceArray* src, PyObject* keepalive);

/* hold for an import: checks *src, and that it fits schema (already through check_schema_tree;
 * NULL: no schema), then moves it; on a bad tree nothing is moved. */
PyObject* hold_fitting(struct ArrowDeviceArray* src, const struct ArrowSchema* schema);

/* A sequence of CDeviceArray as a new C array of their containers (borrowed), or NULL with an error. */
Container** containers_of(PyObject* seq, Py_ssize_t* n);

/* The (schema, array) capsule pair exporting a held array with this top null count (-1: its own),
 * the schema a copy of *schema; None when its null counts are to be computed first (C6). */
PyObject* export_pair_of(CDeviceArrayObject* self, const struct ArrowSchema* schema, int device,
                         long long null_count);

#endif /* ARROWDEV_CAPSULES_PY_ARRAY_H */
