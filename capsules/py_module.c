/* arrowdev._capsules: the Python face of the native core (a thin layer, nanoarrow style). This file
 * is the top of the binding: the module's method table, ownership_stats and PyInit__capsules, and
 * nothing else. The binding is one .c/.h pair per concept, each using only those below it
 * (tests/test_native_layers.py checks it):
 *
 *   py_module.c   the method table, ownership_stats, PyInit
 *   py_import     import_array, import_device_array, import_pair, import_from (the protocol order
 *                 registered by Python, register_protocols)
 *   py_stream     CArrayStream; import_stream, export_stream
 *   py_build      build: arrays of arrowdev's own, checked against their type
 *   py_column     ColumnCore, the native base of arrowdev.ArrowColumn; column_from
 *   py_array      CDeviceArray: one container seen from Python; hold (checked, then moved)
 *   py_types      the registered DataType, the one cache of parsed types, check_schema_tree, and
 *                 the schema functions (type_of_schema, schema_key, export_schema, copy_schema)
 *   py_values     the checks of values in received host buffers (count_set, check_offsets, ...:
 *                 values.c, for arrowdev/serialize/values.py); uses nothing of the binding
 *   py_capsule    capsule destructors and helpers, InvalidArrowError, the keep-alive hook
 *   ---------     the core (container.c, check.c, format.c, schema.c, stream.c; values.c; kernel_slots.c, the CPU
 *                 kernels' per-thread slots, whose functions kernel_slots_addresses hands to the UDF compiler): no
 *                 Python
 *
 * Capsules follow the PyCapsule interface (py_capsule.h).
 */
#include "container.h"
#include "kernel_slots.h"
#include "py_array.h"
#include "py_build.h"
#include "py_capsule.h"
#include "py_column.h"
#include "py_import.h"
#include "py_stream.h"
#include "py_types.h"
#include "py_values.h"

static PyObject* ownership_stats(PyObject* module, PyObject* unused) {
  long long imports = atomic_load(&g_stats.imports);
  long long releases = atomic_load(&g_stats.producer_releases);
  return Py_BuildValue("{sLsLsLsLsLsLsLsL}", "live_containers", imports - releases, "imports", imports,
                       "producer_releases", releases, "live_exported_nodes",
                       (long long)atomic_load(&g_stats.exported_nodes), "live_exported_streams",
                       (long long)atomic_load(&g_stats.exported_streams), "live_built_nodes",
                       (long long)atomic_load(&g_stats.built_nodes), "live_node_blocks",
                       (long long)atomic_load(&g_stats.node_blocks), "live_schema_copies",
                       (long long)atomic_load(&g_stats.schema_blocks));
}

static PyObject* kernel_slots_addresses(PyObject* module, PyObject* unused) {
  return Py_BuildValue("(NN)", PyLong_FromVoidPtr((void*)(uintptr_t)&kernel_arena_slot),
                       PyLong_FromVoidPtr((void*)(uintptr_t)&kernel_failed_slot));
}

#define FAST(name, doc) {#name, (PyCFunction)(void (*)(void))name, METH_FASTCALL, doc}

static PyMethodDef module_methods[] = {
    {"import_device_array", import_device_array, METH_O, "hold an arrow_device_array capsule (moves it)"},
    {"import_array", import_array, METH_O, "hold an arrow_array capsule as CPU data (moves it)"},
    {"import_pair", (PyCFunction)(void (*)(void))import_pair, METH_FASTCALL,
     "import_pair(schema, array, dtype=None): (dtype, held array of dtype) for a capsule pair, the type "
     "given or from the type cache (parsed on a miss), the array checked against the schema, then moved; "
     "None when the schema is not a live arrow_schema capsule and no dtype is given"},
    {"import_from", (PyCFunction)(void (*)(void))import_from, METH_FASTCALL,
     "import_from(obj, column_type=None): read_arrow's fast path for an object whose first protocol is "
     "__arrow_c_device_array__: (dtype, [held]) or, given column_type, a column; (None, what it "
     "returned) or None"},
    {"format_layout", format_layout, METH_O, "(LayoutKind index, bits, fixed_size, children) of a format string"},
    {"schema_key", schema_key_of, METH_O, "a bytes key of an arrow_schema capsule's content, checked first (InvalidArrowError)"},
    {"export_schema", export_schema, METH_O, "export_schema(dtype): a deep copy of a DataType's schema"},
    {"type_of_schema", type_of_schema, METH_O,
     "type_of_schema(capsule): the DataType of an arrow_schema capsule, checked, then from the one type cache or "
     "parsed into it"},
    {"register_types", register_types, METH_VARARGS,
     "register_types(DataType, parse): the type class and the parser (a schema capsule -> DataType) of arrowdev.types"},
    {"register_protocols", register_protocols, METH_O,
     "register_protocols(order): the import protocols in arrowdev's order (a tuple of str), which import_from follows"},
    {"type_cache_size", type_cache_size, METH_NOARGS, "how many parsed types the cache holds (for tests)"},
    {"import_stream", import_stream, METH_O, "take an arrow_array_stream / arrow_device_array_stream capsule"},
    {"build", (PyCFunction)(void (*)(void))build, METH_VARARGS | METH_KEYWORDS,
     "build(dtype, length, null_count, offset, buffers, children, dictionary=None, device_type=1, "
     "device_id=-1, keepalive=None, sync_event=None): an array of arrowdev's own of type dtype (a DataType), "
     "checked against it (ValueError when it does not fit)"},
    {"export_stream", export_stream, METH_VARARGS,
     "export_stream(schema_capsule, arrays, device, device_type=1): a stream capsule (moves the schema)"},
    {"copy_schema", copy_schema, METH_O, "a deep copy of an arrow_schema capsule, checked first (InvalidArrowError)"},
    {"capsule_name", capsule_name, METH_O, "a capsule's name ('' if unnamed), or None for other objects"},
    {"ownership_stats", ownership_stats, METH_NOARGS, "the native core's counters"},
    {"kernel_slots_addresses", kernel_slots_addresses, METH_NOARGS,
     "(kernel_arena_slot, kernel_failed_slot): the addresses of the functions CPU UDF kernels call for this thread's "
     "slots (kernel_slots.h)"},
    FAST(count_set, "count_set(bitmap, bit_offset, length): set bits (values.h)"),
    FAST(check_offsets, "check_offsets(address, width, n, low, high[, split_bytes, threads]): -1, or the first "
                        "bad offset (values.h)"),
    FAST(check_indices, "check_indices(address, width, signed, n, limit, validity, bit_offset) (values.h)"),
    FAST(check_views, "check_views(address, n, sizes, n_buffers, validity, bit_offset) (values.h)"),
    FAST(check_list_views, "check_list_views(offsets, sizes, width, n, limit) (values.h)"),
    FAST(check_run_ends, "check_run_ends(address, width, n, end) (values.h)"),
    FAST(check_union, "check_union(type_ids, offsets, n, lengths) (values.h)"),
    {NULL}};

static struct PyModuleDef capsules_module = {PyModuleDef_HEAD_INIT, "arrowdev._capsules",
                                             "arrowdev's native core (see capsules/container.c)", -1,
                                             module_methods};

PyMODINIT_FUNC PyInit__capsules(void) {
  if (PyType_Ready(&CDeviceArrayType) < 0 || PyType_Ready(&CArrayStreamType) < 0 || PyType_Ready(&ColumnCoreType) < 0) {
    return NULL;
  }
  if (py_capsule_init() < 0) return NULL;
  PyObject* m = PyModule_Create(&capsules_module);
  if (m == NULL) return NULL;
  Py_INCREF(&CDeviceArrayType);
  Py_INCREF(&CArrayStreamType);
  Py_INCREF(&ColumnCoreType);
  if (PyModule_AddObject(m, "CDeviceArray", (PyObject*)&CDeviceArrayType) < 0 ||
      PyModule_AddObject(m, "CArrayStream", (PyObject*)&CArrayStreamType) < 0 ||
      PyModule_AddObject(m, "ColumnCore", (PyObject*)&ColumnCoreType) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
