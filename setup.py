# The native core (capsules/) is plain C on the CPython API: a C compiler is all it needs.
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "arrowdev._capsules",
            sources=["capsules/check.c", "capsules/format.c", "capsules/container.c", "capsules/schema.c", "capsules/stream.c",
                     "capsules/module.c", "capsules/column.c", "capsules/import_module.c", "capsules/stream_module.c"],
            depends=["capsules/abi.h", "capsules/check.h", "capsules/format.h", "capsules/container.h", "capsules/module.h",
                     "capsules/path_error.h", "capsules/schema.h", "capsules/stream.h"],
            extra_compile_args=["-std=c11", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter",
                                "-Wno-missing-field-initializers", "-Wno-cast-function-type"],
        )
    ]
)
