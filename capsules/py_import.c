/* arrowdev._capsules, imports: how a producer's arrays come in (see py_import.h for the layer). The
 * module functions import_array, import_device_array, import_pair and import_from; every one holds
 * what it imports through hold_fitting (py_array.c), which checks the tree before it moves it (C9):
 * on a bad tree nothing is moved, the producer's capsule stays usable, and its destructor releases
 * it as usual.
 */
#include <string.h>

#include "py_array.h"
#include "py_capsule.h"
#include "py_column.h"
#include "py_import.h"
#include "py_types.h"
#include "released.h"

/* Holds the array in an arrow_device_array or arrow_array capsule (CPU data), checked against
 * schema when one is given; on a bad tree nothing is moved and the capsule stays usable. */
static PyObject* import_capsule(PyObject* capsule, int device, const struct ArrowSchema* schema) {
  if (device) {
    struct ArrowDeviceArray* src = capsule_struct(capsule, "arrow_device_array");
    return src != NULL ? hold_fitting(src, schema) : NULL;
  }
  struct ArrowArray* src = capsule_struct(capsule, "arrow_array");
  if (src == NULL) return NULL;
  struct ArrowDeviceArray wrapped;
  memset(&wrapped, 0, sizeof wrapped);
  memcpy(&wrapped.array, src, sizeof *src);
  wrapped.device_type = ARROW_DEVICE_CPU;
  wrapped.device_id = -1;
  PyObject* out = hold_fitting(&wrapped, schema);
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

/* ---- the protocol order ---------------------------------------------------------------------- */

/* arrowdev's import protocols in order (a tuple of str): Python's, registered once
 * (arrowdev/core/from_arrow.py, register_protocols). import_from takes its fast path only for an
 * object whose first protocol is kFastProtocol, at index fast_at of the order (-1: none). */
static const char kFastProtocol[] = "__arrow_c_device_array__";
static PyObject* protocols;
static Py_ssize_t fast_at = -1;

PyObject* register_protocols(PyObject* module, PyObject* order) {
  if (!PyTuple_CheckExact(order)) {
    return PyErr_Format(PyExc_TypeError, "expected a tuple of protocol names, got %.200s", Py_TYPE(order)->tp_name);
  }
  Py_ssize_t found = -1;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(order); i++) {
    PyObject* name = PyTuple_GET_ITEM(order, i);
    if (!PyUnicode_Check(name)) {
      return PyErr_Format(PyExc_TypeError, "expected protocol names (str), got %.200s at %zd",
                          Py_TYPE(name)->tp_name, i);
    }
    if (found < 0 && PyUnicode_CompareWithASCIIString(name, kFastProtocol) == 0) found = i;
  }
  Py_XSETREF(protocols, Py_NewRef(order));
  fast_at = found;
  Py_RETURN_NONE;
}

/* 1 with the bound method in *method when obj's first protocol in the registered order is
 * kFastProtocol; 0 with *method NULL when it is another one or obj has none (as hasattr: a failed
 * lookup is cleared, and the caller's own steps say what obj is); -1 with RuntimeError when no order
 * was registered. Nothing is called. */
static int fast_protocol(PyObject* obj, PyObject** method) {
  *method = NULL;
  if (protocols == NULL) {
    PyErr_SetString(PyExc_RuntimeError,
                    "arrowdev.core.from_arrow has not registered the protocol order with the native core");
    return -1;
  }
  for (Py_ssize_t i = 0; i < fast_at; i++) {
    if (PyObject_HasAttr(obj, PyTuple_GET_ITEM(protocols, i))) return 0;
  }
  if (fast_at < 0) return 0;
  *method = PyObject_GetAttr(obj, PyTuple_GET_ITEM(protocols, fast_at)); /* one lookup: "has it?" and the call */
  if (*method == NULL) PyErr_Clear();
  return *method != NULL;
}

/* import_from(obj, column_type=None): read_arrow's fast path (arrowdev/core/from_arrow.py), the same
 * steps for the commonest producer: an object (not a tuple or capsule) whose first protocol in
 * arrowdev's order (register_protocols) is __arrow_c_device_array__, as PyArrow arrays and record
 * batches are. Calls it with no arguments, then imports the pair as import_pair does: (dtype,
 * [held]), or with column_type (ColumnCore or a subclass: ArrowColumn) a new column of that type
 * over the one chunk (py_column.c; Python runs only to parse a type not cached yet); else, when the
 * method returned no pair of a live schema capsule and an array, (None, what it returned) for the
 * caller to go on with. None when obj is not such an object: nothing was called. */
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
  PyObject* obj = args[0];
  if (PyTuple_Check(obj) || PyCapsule_CheckExact(obj)) Py_RETURN_NONE;
  PyObject* method;
  int fast = fast_protocol(obj, &method);
  if (fast <= 0) return fast < 0 ? NULL : Py_NewRef(Py_None);
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
