/* arrowdev._capsules, types: what the binding knows of arrowdev.types.DataType, the one cache of
 * parsed types, and the check of a producer's schema tree (see py_types.h for the layer).
 *
 * arrowdev.types registers its DataType class and its parser (an arrow_schema capsule -> a
 * DataType, nanoarrow parsing every node) once, at import (register_types). From then on the
 * binding takes DataType objects, never schema addresses, from Python: type_schema finds the
 * ArrowSchema a DataType wraps (it keeps it alive), and build, export_schema, export_pair and
 * with_type all start there.
 *
 * The cache: parsed types by schema content (schema.c S2), so that importing the same type again
 * costs no parse, and capsules whose trees have the same content share one DataType. A small ring
 * of the last types looked up is compared by content first (schema_equal, no key to build: a
 * program imports the same few types again and again), then a dict keyed by schema_key, bounded
 * (when full it starts over). It is the only cache of parsed types; Python keeps none.
 */
#include "check.h"
#include "format.h"
#include "py_capsule.h"
#include "py_types.h"
#include "released.h"
#include "schema.h"

static PyObject* data_type_class; /* arrowdev.types.DataType */
static PyObject* type_parser;     /* arrowdev.types._parse_schema: arrow_schema capsule -> DataType */

PyObject* register_types(PyObject* module, PyObject* args) {
  PyObject *cls, *parser;
  if (!PyArg_ParseTuple(args, "O!O", &PyType_Type, &cls, &parser)) return NULL;
  if (!PyCallable_Check(parser)) {
    return PyErr_Format(PyExc_TypeError, "expected a callable parser, got %.200s", Py_TYPE(parser)->tp_name);
  }
  Py_XSETREF(data_type_class, Py_NewRef(cls));
  Py_XSETREF(type_parser, Py_NewRef(parser));
  Py_RETURN_NONE;
}

const struct ArrowSchema* type_schema(PyObject* dtype) {
  static PyObject* address_name = NULL;
  if (data_type_class == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "arrowdev.types has not registered DataType with the native core");
    return NULL;
  }
  if ((PyObject*)Py_TYPE(dtype) != data_type_class && PyObject_IsInstance(dtype, data_type_class) != 1) {
    if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "expected a DataType, got %.200s", Py_TYPE(dtype)->tp_name);
    return NULL;
  }
  if (address_name == NULL && (address_name = PyUnicode_InternFromString("_address")) == NULL) return NULL;
  PyObject* address = PyObject_GetAttr(dtype, address_name);
  const struct ArrowSchema* schema = address != NULL ? PyLong_AsVoidPtr(address) : NULL;
  Py_XDECREF(address);
  if (schema == NULL && !PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "expected a DataType with a schema, got none");
  return schema;
}

int check_schema_tree(const struct ArrowSchema* schema) {
  char err[1200];
  if (schema_check(schema, err, sizeof err) == 0) return 0;
  PyErr_Format(InvalidArrowError, "malformed Arrow schema: %s", err);
  return -1;
}

/* ---- the type cache ------------------------------------------------------------------------ */

enum { kRecentTypes = 8, kKnownTypesMax = 1024 };
static struct {
  const struct ArrowSchema* schema; /* the type's own, valid while we hold the type */
  PyObject* dtype;
} recent_types[kRecentTypes];
static int recent_next;
static PyObject* known_types; /* dict: schema_key bytes -> DataType */

/* Puts a DataType in the ring of recent ones and returns its schema (NULL when it has none). */
static const struct ArrowSchema* remember_type(PyObject* dtype) {
  const struct ArrowSchema* schema = type_schema(dtype);
  if (schema == NULL) return NULL;
  int slot = recent_next;
  recent_next = (recent_next + 1) % kRecentTypes;
  Py_XSETREF(recent_types[slot].dtype, Py_NewRef(dtype));
  recent_types[slot].schema = schema;
  return schema;
}

/* The schema_key of a checked tree as bytes, or NULL with an exception. */
PyObject* schema_key_bytes(const struct ArrowSchema* schema) {
  SchemaKey key;
  PyObject* out;
  if (schema_key(schema, &key) != 0) out = PyErr_Format(InvalidArrowError, "malformed Arrow schema");
  else if (key.failed) out = PyErr_NoMemory();
  else out = PyBytes_FromStringAndSize(key.data, (Py_ssize_t)key.len);
  schema_key_free(&key);
  return out;
}

/* Parses a checked tree with the registered parser (on a copy: the producer's tree is never
 * kept) and caches the result under key. A new reference, or NULL with an exception. */
static PyObject* parse_and_cache(const struct ArrowSchema* schema, PyObject* key) {
  if (type_parser == NULL) {
    PyErr_SetString(PyExc_RuntimeError, "arrowdev.types has not registered its parser with the native core");
    return NULL;
  }
  PyObject* copy = schema_capsule_copy(schema);
  PyObject* dtype = copy != NULL ? PyObject_CallOneArg(type_parser, copy) : NULL;
  Py_XDECREF(copy);
  if (dtype == NULL) return NULL;
  if (known_types == NULL && (known_types = PyDict_New()) == NULL) goto fail;
  if (PyDict_GET_SIZE(known_types) >= kKnownTypesMax) PyDict_Clear(known_types);
  if (PyDict_SetItem(known_types, key, dtype) < 0) goto fail;
  return dtype;
fail:
  Py_DECREF(dtype);
  return NULL;
}

PyObject* type_for_schema(const struct ArrowSchema* schema, const struct ArrowSchema** own) {
  for (int i = 0; i < kRecentTypes; i++) {
    if (recent_types[i].dtype != NULL && schema_equal(recent_types[i].schema, schema)) {
      *own = recent_types[i].schema;
      return Py_NewRef(recent_types[i].dtype);
    }
  }
  PyObject* key = schema_key_bytes(schema);
  if (key == NULL) return NULL;
  PyObject* dtype = known_types != NULL ? PyDict_GetItemWithError(known_types, key) : NULL;
  if (dtype != NULL) Py_INCREF(dtype);
  else if (!PyErr_Occurred()) dtype = parse_and_cache(schema, key);
  Py_DECREF(key);
  if (dtype != NULL && (*own = remember_type(dtype)) == NULL) Py_CLEAR(dtype);
  return dtype;
}

/* type_of_schema(capsule): the DataType of an arrow_schema capsule; its tree is checked first
 * (InvalidArrowError), then found in the cache or parsed into it. */
PyObject* type_of_schema(PyObject* module, PyObject* capsule) {
  const struct ArrowSchema* schema = capsule_struct(capsule, "arrow_schema");
  if (schema == NULL || check_schema_tree(schema)) return NULL;
  const struct ArrowSchema* own;
  return type_for_schema(schema, &own);
}

PyObject* type_cache_size(PyObject* module, PyObject* unused) {
  return PyLong_FromSsize_t(known_types != NULL ? PyDict_GET_SIZE(known_types) : 0);
}

/* ---- module functions on schemas ----------------------------------------------------------- */

/* schema_key(capsule): bytes equal for two schema capsules exactly when their trees describe the
 * same type, names, nullability and metadata (schema.c S2); InvalidArrowError for a malformed tree. */
PyObject* schema_key_of(PyObject* module, PyObject* capsule) {
  const struct ArrowSchema* schema = capsule_struct(capsule, "arrow_schema");
  if (schema == NULL || check_schema_tree(schema)) return NULL;
  return schema_key_bytes(schema);
}

/* export_schema(dtype): a new arrow_schema capsule, a copy of a DataType's schema. */
PyObject* export_schema(PyObject* module, PyObject* dtype) {
  const struct ArrowSchema* schema = type_schema(dtype);
  return schema != NULL ? schema_capsule_copy(schema) : NULL;
}

/* copy_schema(capsule): a deep copy of an arrow_schema capsule, its tree checked first. */
PyObject* copy_schema(PyObject* module, PyObject* capsule) {
  struct ArrowSchema* src = capsule_struct(capsule, "arrow_schema");
  if (src == NULL) return NULL;
  if (ArrowSchemaIsReleased(src)) return PyErr_Format(InvalidArrowError, "the schema capsule was already consumed");
  return check_schema_tree(src) ? NULL : schema_capsule_copy(src);
}

/* format_layout(format): how the native core lays out a format string, (kind, bits, fixed_size, children):
 * kind is the LayoutKind's index (capsules/format.h); ValueError for a format it does not know. Python's one
 * table of layouts (arrowdev/core/layout.py) is checked against it (tests/test_layouts.py). */
PyObject* format_layout(PyObject* module, PyObject* format) {
  const char* text = PyUnicode_AsUTF8(format);
  if (text == NULL) return NULL;
  FormatInfo info;
  char err[256];
  if (format_parse(text, &info, err, sizeof err) != 0) return PyErr_Format(PyExc_ValueError, "%s", err);
  return Py_BuildValue("(iLLL)", (int)info.kind, (long long)info.bits, (long long)info.fixed_size,
                       (long long)info.children);
}
