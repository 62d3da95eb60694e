/* arrowdev._capsules, imports: how a producer's arrays come in. hold (checks, then moves a struct
 * into a container), the module functions import_array, import_device_array, import_pair and
 * import_from, and schema_key (schema.c S2), by which the type cache (py_types.c) finds a parsed type again.
 *
 * Every import checks the tree before it moves it (C9, docs/architecture.md): on a bad tree nothing is moved,
 * the producer's capsule stays usable, and its destructor releases it as usual.
 */
#include <string.h>

#include "check.h"
#include "released.h"
#include "py_module.h"
#include "schema.h"

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

/* 0 when a producer's schema tree is well formed (check.c), else -1 with InvalidArrowError. */
int check_schema_tree(const struct ArrowSchema* schema) {
  char err[1200];
  if (schema_check(schema, err, sizeof err) == 0) return 0;
  PyErr_Format(InvalidArrowError, "malformed Arrow schema: %s", err);
  return -1;
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

/* Checks *src, then moves it into a new CDeviceArray; on a bad tree nothing is moved. */
PyObject* hold(struct ArrowDeviceArray* src, PyObject* keepalive) {
  return check_holdable(src, NULL) ? NULL : move_in(src, keepalive);
}

/* Holds the array in an arrow_device_array or arrow_array capsule (CPU data), checked against
 * schema when one is given; on a bad tree nothing is moved and the capsule stays usable. */
static PyObject* import_capsule(PyObject* capsule, int device, const struct ArrowSchema* schema) {
  if (device) {
    struct ArrowDeviceArray* src = capsule_struct(capsule, "arrow_device_array");
    if (src == NULL || check_holdable(src, schema)) return NULL;
    return move_in(src, NULL);
  }
  struct ArrowArray* src = capsule_struct(capsule, "arrow_array");
  if (src == NULL) return NULL;
  struct ArrowDeviceArray wrapped;
  memset(&wrapped, 0, sizeof wrapped);
  memcpy(&wrapped.array, src, sizeof *src);
  wrapped.device_type = ARROW_DEVICE_CPU;
  wrapped.device_id = -1;
  if (check_holdable(&wrapped, schema)) return NULL;
  PyObject* out = move_in(&wrapped, NULL);
  if (out != NULL) ArrowArrayMarkReleased(src); /* moved */
  return out;
}

PyObject* import_device_array(PyObject* module, PyObject* capsule) {
  return import_capsule(capsule, 1, NULL);
}

PyObject* import_array(PyObject* module, PyObject* capsule) { return import_capsule(capsule, 0, NULL); }

/* The schema in an unconsumed arrow_schema capsule, or NULL (no exception) for anything else. */
static const struct ArrowSchema* schema_in(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, "arrow_schema")) return NULL;
  const struct ArrowSchema* schema = PyCapsule_GetPointer(capsule, "arrow_schema");
  return schema != NULL && !ArrowSchemaIsReleased(schema) ? schema : NULL;
}

/* Imports a (schema, array) capsule pair: the array (arrow_device_array, else arrow_array)
 * checked against the schema (capsules/check.c), then moved (C9: on a bad tree nothing is moved),
 * and typed. Its type is `given` (not None), else the cached or newly parsed type of the schema
 * (py_types.c; a malformed schema raises before the move). 1 with new references in *dtype and
 * *held, *own the type's own schema; 0 when there is no schema capsule to read and no type given
 * (nothing touched: the caller's own steps say what is wrong); -1 with an exception. */
static int import_typed(PyObject* schema_capsule, PyObject* array_capsule, PyObject* given, PyObject** dtype,
                        PyObject** held, const struct ArrowSchema** own) {
  const struct ArrowSchema* schema = schema_in(schema_capsule);
  *own = NULL;
  if (schema != NULL && check_schema_tree(schema)) return -1; /* before anything walks it */
  if (schema == NULL) {
    if (given == Py_None) return 0;
    if (capsule_struct(schema_capsule, "arrow_schema") != NULL) {
      PyErr_SetString(InvalidArrowError, "the schema capsule was already consumed");
    }
    return -1;
  }
  if (given != Py_None) {
    if ((*own = type_schema(given)) == NULL) return -1;
    *dtype = Py_NewRef(given);
  } else if ((*dtype = type_for_schema(schema, own)) == NULL) {
    return -1;
  }
  const char* name = PyCapsule_CheckExact(array_capsule) ? PyCapsule_GetName(array_capsule) : NULL;
  int device = name != NULL && strcmp(name, "arrow_device_array") == 0;
  *held = import_capsule(array_capsule, device, schema);
  if (*held != NULL) {
    with_type_of(*held, *dtype, *own);
    return 1;
  }
  Py_CLEAR(*dtype);
  return -1;
}

/* import_pair(schema_capsule, array_capsule, dtype=None): (dtype, held array), as import_typed;
 * None when the schema is not a live arrow_schema capsule and no dtype is given. */
PyObject* import_pair(PyObject* module, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs < 2 || nargs > 3) {
    return PyErr_Format(PyExc_TypeError, "import_pair expected 2 or 3 arguments, got %zd", nargs);
  }
  PyObject *dtype, *held;
  const struct ArrowSchema* own;
  int found = import_typed(args[0], args[1], nargs == 3 ? args[2] : Py_None, &dtype, &held, &own);
  if (found <= 0) return found == 0 ? Py_NewRef(Py_None) : NULL;
  PyObject* pair = PyTuple_Pack(2, dtype, held);
  Py_DECREF(dtype);
  Py_DECREF(held);
  return pair;
}

/* schema_key(capsule): bytes equal for two schema capsules exactly when their trees describe the
 * same type, names, nullability and metadata (schema.c S2); InvalidArrowError for a malformed tree. */
PyObject* schema_key_of(PyObject* module, PyObject* capsule) {
  const struct ArrowSchema* schema = capsule_struct(capsule, "arrow_schema");
  if (schema == NULL || check_schema_tree(schema)) return NULL;
  return schema_key_bytes(schema);
}

/* Drops a reference with a pending exception set aside: the last reference to a producer's
 * capsule runs its destructor, which may be Python code (a ctypes producer) that must not run
 * with an exception set. */
static void decref_keeping_error(PyObject* obj) {
  if (!PyErr_Occurred()) {
    Py_DECREF(obj);
    return;
  }
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  Py_DECREF(obj);
  PyErr_Restore(type, value, traceback);
}

/* import_from(obj, column_type=None): read_arrow's fast path (arrowdev/_from_arrow.py), the same
 * steps for the commonest producer: an object (not a tuple or capsule) whose first protocol in
 * arrowdev's order is __arrow_c_device_array__, as PyArrow arrays and record batches are. Calls it
 * with no arguments, then imports the pair as import_pair does: (dtype, [held]), or with
 * column_type (ColumnCore or a subclass: ArrowColumn) a new column of that type over the one chunk
 * (py_column.c; Python runs only to parse a type not cached yet); else, when the method returned
 * no pair of a live schema capsule and an array, (None, what it returned) for the caller to go on
 * with. None when obj is not such an object: nothing was called. */
PyObject* import_from(PyObject* module, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 1 && nargs != 2) {
    return PyErr_Format(PyExc_TypeError, "import_from expected 1 or 2 arguments, got %zd", nargs);
  }
  PyTypeObject* column_type = NULL;
  if (nargs == 2 && args[1] != Py_None) {
    if (!PyType_Check(args[1]) || !PyType_IsSubtype((PyTypeObject*)args[1], &ColumnCoreType)) {
      return PyErr_Format(PyExc_TypeError, "expected a ColumnCore type or None, got %.200s", Py_TYPE(args[1])->tp_name);
    }
    column_type = (PyTypeObject*)args[1];
  }
  static PyObject *device_stream = NULL, *device_array = NULL;
  if (device_stream == NULL) {
    device_stream = PyUnicode_InternFromString("__arrow_c_device_stream__");
    device_array = PyUnicode_InternFromString("__arrow_c_device_array__");
    if (device_stream == NULL || device_array == NULL) return NULL;
  }
  PyObject* obj = args[0];
  if (PyTuple_Check(obj) || PyCapsule_CheckExact(obj) || PyObject_HasAttr(obj, device_stream)) Py_RETURN_NONE;
  PyObject* method = PyObject_GetAttr(obj, device_array); /* one lookup for "has it?" and the call */
  if (method == NULL) {
    PyErr_Clear(); /* as hasattr: no such method, and the caller's own steps say what obj is */
    Py_RETURN_NONE;
  }
  PyObject* exported = PyObject_CallNoArgs(method);
  Py_DECREF(method);
  if (exported == NULL) return NULL;
  PyObject *dtype, *held, *out = NULL;
  const struct ArrowSchema* own = NULL;
  int found = 0;
  if (PyTuple_CheckExact(exported) && PyTuple_GET_SIZE(exported) == 2) {
    found = import_typed(PyTuple_GET_ITEM(exported, 0), PyTuple_GET_ITEM(exported, 1), Py_None, &dtype, &held, &own);
  }
  if (found == 0) {
    out = PyTuple_Pack(2, Py_None, exported);
  } else if (found == 1 && column_type != NULL) {
    out = column_from(column_type, dtype, own, held);
    Py_DECREF(dtype);
    Py_DECREF(held);
  } else if (found == 1) { /* (dtype, [held]), stealing both references */
    PyObject* chunks = PyList_New(1);
    out = chunks != NULL ? PyTuple_New(2) : NULL;
    if (out == NULL) {
      Py_XDECREF(chunks);
      Py_DECREF(dtype);
      Py_DECREF(held);
    } else {
      PyList_SET_ITEM(chunks, 0, held);
      PyTuple_SET_ITEM(out, 0, dtype);
      PyTuple_SET_ITEM(out, 1, chunks);
    }
  }
  decref_keeping_error(exported);
  return out;
}
