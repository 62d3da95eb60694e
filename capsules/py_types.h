/* py_types: what the binding knows of arrowdev.types.DataType (registered once, register_types),
 * the one cache of parsed types (by schema content, schema.c S2), the check of a producer's schema
 * tree, and the module functions on schemas (type_of_schema, schema_key, export_schema,
 * copy_schema, type_cache_size).
 *
 * Layer: above py_capsule (capsules, InvalidArrowError); below py_array and everything that takes a
 * DataType. It knows no held array. */
#ifndef ARROWDEV_CAPSULES_PY_TYPES_H
#define ARROWDEV_CAPSULES_PY_TYPES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "abi.h"

/* The ArrowSchema of a DataType, or NULL with TypeError ("expected a DataType, got ...") for
 * anything else. */
const struct ArrowSchema* type_schema(PyObject* dtype);

/* The DataType of a schema tree that passed check_schema_tree, as a new reference: from the
 * cache, else parsed (by the parser arrowdev.types registered) and cached. *own is set to the
 * type's own ArrowSchema. NULL with an exception when parsing fails. */
PyObject* type_for_schema(const struct ArrowSchema* schema, const struct ArrowSchema** own);

/* The schema_key of a checked schema tree as bytes, or NULL with an exception. */
PyObject* schema_key_bytes(const struct ArrowSchema* schema);

/* 0 when a producer's schema tree passes schema_check (check.c), else -1 with InvalidArrowError. */
int check_schema_tree(const struct ArrowSchema* schema);

/* The module functions on types and schemas. */
PyObject* register_types(PyObject* module, PyObject* args);
PyObject* type_of_schema(PyObject* module, PyObject* capsule);
PyObject* type_cache_size(PyObject* module, PyObject* unused);
PyObject* schema_key_of(PyObject* module, PyObject* capsule);
/* (kind, bits, fixed_size, children) of a format string as the native core parses it (format.h). */
PyObject* format_layout(PyObject* module, PyObject* format);
PyObject* export_schema(PyObject* module, PyObject* dtype);
PyObject* copy_schema(PyObject* module, PyObject* capsule);

#endif /* ARROWDEV_CAPSULES_PY_TYPES_H */
