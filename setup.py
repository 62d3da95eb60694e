# The native core (capsules/) is plain C: the ownership core (container, check, format, schema, stream)
# knows no Python; the binding (py_*.c) is on the CPython API. A C compiler is all it needs.
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "arrowdev._capsules",
            # the binding bottom to top (capsules/py_module.c's first comment): each uses only those before it
            sources=["capsules/check.c", "capsules/format.c", "capsules/container.c", "capsules/schema.c", "capsules/stream.c",
                     "capsules/values.c", "capsules/kernel_slots.c", "capsules/py_capsule.c", "capsules/py_types.c",
                     "capsules/py_array.c",
                     "capsules/py_build.c", "capsules/py_column.c", "capsules/py_import.c", "capsules/py_stream.c",
                     "capsules/py_values.c", "capsules/py_module.c"],
            depends=["capsules/abi.h", "capsules/check.h", "capsules/format.h", "capsules/container.h",
                     "capsules/path_error.h", "capsules/released.h", "capsules/schema.h", "capsules/stream.h",
                     "capsules/values.h", "capsules/kernel_slots.h", "capsules/py_capsule.h", "capsules/py_types.h",
                     "capsules/py_array.h",
                     "capsules/py_build.h", "capsules/py_column.h", "capsules/py_import.h", "capsules/py_stream.h",
                     "capsules/py_values.h"],
            extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                "-Wno-missing-field-initializers", "-Wno-cast-function-type"],
            extra_link_args=["-pthread"],  # values.c scans large offsets buffers on several threads
        )
    ]
)
