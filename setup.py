# The native core (capsules/) is plain C: the ownership core (container, check, format, schema, stream)
# knows no Python; the binding (py_*.c) is on the CPython API. A C compiler is all it needs.
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "arrowdev._capsules",
            sources=["capsules/check.c", "capsules/format.c", "capsules/container.c", "capsules/schema.c", "capsules/stream.c",
                     "capsules/py_module.c", "capsules/py_column.c", "capsules/py_import.c", "capsules/py_stream.c",
                     "capsules/py_types.c"],
            depends=["capsules/abi.h", "capsules/check.h", "capsules/format.h", "capsules/container.h", "capsules/py_module.h",
                     "capsules/path_error.h", "capsules/released.h", "capsules/schema.h", "capsules/stream.h"],
            extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                "-Wno-missing-field-initializers", "-Wno-cast-function-type"],
        )
    ]
)
