/* The Python binding of the native core (the py_*.c files: py_module.c, py_import.c, py_stream.c,
 * py_column.c): what they share. The core itself (container.c, check.c, format.c, schema.c,
 * stream.c) includes no Python header and calls nothing here. */
#ifndef ARROWDEV_CAPSULES_MODULE_H
#define ARROWDEV_CAPSULES_MODULE_H

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

/* arrowdev.ArrowColumn's native half (py_column.c). */
typedef struct {
  PyObject_HEAD PyObject* type;       /* a DataType (_type) */
  PyObject* chunks;                   /* a list of CDeviceArray (_chunks) */
  PyObject* nulls;                    /* a list of per-chunk null counts, or NULL (_nulls) */
  const struct ArrowSchema* schema;   /* type._address, or NULL: valid while type is held */
  PyObject* weakrefs;
} ColumnObject;

extern PyObject* InvalidArrowError; /* arrowdev.errors.InvalidArrowError */
extern PyTypeObject CDeviceArrayType;
extern PyTypeObject CArrayStreamType;
extern PyTypeObject ColumnCoreType;

/* A new column of `type` (ColumnCore or a subclass) of one chunk, held (a CDeviceArray), of type
 * dtype, whose ArrowSchema is schema (kept alive by dtype); no Python __init__ runs (py_column.c). */
PyObject* column_from(PyTypeObject* type, PyObject* dtype, const struct ArrowSchema* schema, PyObject* held);

/* The (schema, array) capsule pair exporting a held array with this top null count (-1: its own),
 * the schema a copy of *schema; None when its null counts are to be computed first (py_module.c). */
PyObject* export_pair_of(CDeviceArrayObject* self, const struct ArrowSchema* schema, int device,
                         long long null_count);

/* Capsule destructors: release the struct if never consumed, then free it. */
void schema_capsule_free(PyObject* capsule);
void stream_capsule_free(PyObject* capsule);
void device_stream_capsule_free(PyObject* capsule);

/* The struct inside a capsule of the expected name, or NULL with TypeError / ValueError set. */
void* capsule_struct(PyObject* capsule, const char* expected);

/* A new CDeviceArray owning the reference c (dropped on failure), of type dtype (may be NULL:
 * untyped) whose ArrowSchema is schema. */
PyObject* wrap_container(Container* c, PyObject* dtype, const struct ArrowSchema* schema);

/* Gives a new, untyped CDeviceArray (held, returned) the type dtype with ArrowSchema schema. */
PyObject* with_type_of(PyObject* held, PyObject* dtype, const struct ArrowSchema* schema);

/* A new arrow_schema capsule holding a deep copy of *src (py_module.c). */
PyObject* schema_capsule_copy(const struct ArrowSchema* src);

/* ---- types (py_types.c): the registered DataType class, the one cache of parsed types ---- */

/* The ArrowSchema of a DataType, or NULL with TypeError ("expected a DataType, got ...") for
 * anything else. */
const struct ArrowSchema* type_schema(PyObject* dtype);

/* The DataType of a schema tree that passed check_schema_tree, as a new reference: from the
 * cache, else parsed (by the parser arrowdev.types registered) and cached. *own is set to the
 * type's own ArrowSchema. NULL with an exception when parsing fails. */
PyObject* type_for_schema(const struct ArrowSchema* schema, const struct ArrowSchema** own);

/* The module functions of py_types.c. */
PyObject* register_types(PyObject* module, PyObject* args);
PyObject* type_of_schema(PyObject* module, PyObject* capsule);
PyObject* type_cache_size(PyObject* module, PyObject* unused);
PyObject* build(PyObject* module, PyObject* args, PyObject* kwargs);

/* Checks *src, then moves it into a new CDeviceArray; on a bad tree nothing is moved (py_import.c). */
PyObject* hold(struct ArrowDeviceArray* src, PyObject* keepalive);

/* 0 when a producer's schema tree passes schema_check, else -1 with InvalidArrowError (py_import.c). */
int check_schema_tree(const struct ArrowSchema* schema);

/* A sequence of CDeviceArray as a new C array of their containers (borrowed), or NULL with an error. */
Container** containers_of(PyObject* seq, Py_ssize_t* n);

/* The import functions of the module (py_import.c). */
PyObject* import_array(PyObject* module, PyObject* capsule);
PyObject* import_device_array(PyObject* module, PyObject* capsule);
PyObject* import_pair(PyObject* module, PyObject* const* args, Py_ssize_t nargs);
PyObject* import_from(PyObject* module, PyObject* const* args, Py_ssize_t nargs);
PyObject* schema_key_of(PyObject* module, PyObject* capsule);
/* The schema_key of a checked schema tree as bytes, or NULL with an exception (py_types.c). */
PyObject* schema_key_bytes(const struct ArrowSchema* schema);

/* The stream functions of the module (py_stream.c). */
PyObject* import_stream(PyObject* module, PyObject* capsule);
PyObject* export_stream(PyObject* module, PyObject* args);

#endif /* ARROWDEV_CAPSULES_MODULE_H */
