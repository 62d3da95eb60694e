/* py_column: ColumnCore, the native half of arrowdev.ArrowColumn: its state (type, chunks, null
 * counts) and its hot exports, and column_from, a column of one chunk made without running Python.
 *
 * Layer: above py_array (its chunks are CDeviceArrays, its exports export_pair_of) and py_types
 * (its type is a DataType); below py_import (import_from makes columns). */
#ifndef ARROWDEV_CAPSULES_PY_COLUMN_H
#define ARROWDEV_CAPSULES_PY_COLUMN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "abi.h"

/* arrowdev.ArrowColumn's native half. */
typedef struct {
  PyObject_HEAD PyObject* type;       /* a DataType (_type) */
  PyObject* chunks;                   /* a list of CDeviceArray (_chunks) */
  PyObject* nulls;                    /* a list of per-chunk null counts, or NULL (_nulls) */
  const struct ArrowSchema* schema;   /* type._address, or NULL: valid while type is held */
  PyObject* weakrefs;
} ColumnObject;

extern PyTypeObject ColumnCoreType;

/* A new column of `type` (ColumnCore or a subclass) of one chunk, held (a CDeviceArray), of type
 * dtype, whose ArrowSchema is schema (kept alive by dtype); no Python __init__ runs. */
PyObject* column_from(PyTypeObject* type, PyObject* dtype, const struct ArrowSchema* schema, PyObject* held);

#endif /* ARROWDEV_CAPSULES_PY_COLUMN_H */
