"""The numba targets arrowdev's extensions register with, each with typing and lowering registries of its own.

numba-cuda's extension modules keep their declarations out of numba's global registries: each module owns a
typing ``Registry`` and a lowering ``Registry`` (``cudadecl.registry``, ``cudaimpl.registry``,
``fp16.typing_registry`` / ``fp16.target_registry``), and the target's contexts install them. An
:class:`ExtensionTarget` does the same for one target (numba's CPU target or numba-cuda's ``cuda_target``): the
string extension (``strings/``), constant sets and ``load_streaming`` register into its two registries, and
:meth:`ExtensionTarget.install` installs both into that target's typing and target contexts, once. Nothing
goes into ``numba.core.typing.templates.builtin_registry``, ``numba.core.imputils.builtin_registry`` or
numba-cuda's, so no other numba user or target sees arrowdev's types (numba-cuda copies the third-party
entries of numba's CPU ``builtin_registry`` into the CUDA target: a CPU lowering registered there would have
reached CUDA too).

``typeof`` and the data models stay where each target keeps them (its ``typeof_impl``, its data model
manager), as numba-cuda's own modules leave them: they are keyed by arrowdev's own classes.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

__all__ = ["ExtensionTarget", "cpu_target", "cuda_target"]


class ExtensionTarget:
    """One numba target as an arrowdev extension sees it: the target's own API (``templates``, ``cgutils``,
    ``models``, ``register_model``, ``typeof_impl``) and two registries of arrowdev's own, filled through
    the decorators numba's extension API names (``type_callable``, ``infer_getattr``, ``intrinsic``,
    ``lower_builtin``, ``lower_constant``, ``lower_cast``)."""

    def __init__(self, name: str, api: Any, templates: Any, imputils: Any, cgutils: Any, models: Any,
                 contexts: Callable[[], tuple[Any, Any]]) -> None:
        self.name, self.templates, self.cgutils, self.models = name, templates, cgutils, models
        self.typeof_impl, self.register_model = api.typeof_impl, api.register_model
        self.typing_registry = templates.Registry()
        self.lowering_registry = imputils.Registry()
        self.infer_getattr = self.typing_registry.register_attr
        self.lower_builtin = self.lowering_registry.lower
        self.lower_constant = self.lowering_registry.lower_constant
        self.lower_cast = self.lowering_registry.lower_cast
        self._contexts = contexts

    def install(self) -> None:
        """Installs both registries into the target's typing and target contexts (what numba-cuda's
        ``load_additional_registries`` does for its own modules). A context loads a registry's entries
        when it is installed, so this runs after every registration; a second call loads only new ones.

        The contexts load numba's own registries first (``refresh``, as a first compile would): installed
        into a fresh context, arrowdev's registries would come first and numba's typing of the builtins
        both declare (``len``, operators) would follow arrowdev's; a string helper calling ``min`` then
        failed to lower."""
        # under the target's compiler lock: a refresh walks numba's registration generators, which a compile
        # in another thread (a Dask worker's) would be walking at the same time ("generator already executing")
        if self.name == "cuda":
            from numba.cuda.core.compiler_lock import global_compiler_lock
        else:
            from numba.core.compiler_lock import global_compiler_lock
        with global_compiler_lock:
            typing_context, target_context = self._contexts()
            target_context.refresh()  # also refreshes the typing context
            typing_context.install_registry(self.typing_registry)
            target_context.install_registry(self.lowering_registry)

    def type_callable(self, func: Any) -> Callable[[Callable], Callable]:
        """numba's ``type_callable`` into this target's typing registry: ``typer_for(context)`` returns
        the typer of calls to ``func`` (a function, or an operation's name such as ``"String.upper"``)."""
        from numba.core import types

        def decorate(typer_for: Callable) -> Callable:
            def generic(template: Any) -> Any:
                return typer_for(template.context)

            name = f"{getattr(func, '__name__', func)}_CallableTemplate"
            template = type(name, (self.templates.CallableTemplate,), {"key": func, "generic": generic})
            self.typing_registry.register(template)
            if callable(func):
                self.typing_registry.register_global(func, types.Function(template))
            return typer_for

        return decorate

    def intrinsic(self, definition: Callable) -> Callable:
        """numba's ``@intrinsic`` into this target's registries. ``definition(typingctx, *argtypes)``
        returns ``(signature, codegen)``, or None where the arguments do not fit. The result is a stub
        function that stands for the intrinsic in compiled code. numba's own intrinsics register their
        lowering at typing time, into a global registry; this one registers a single lowering for any
        arguments up front, which runs the codegen typing chose for the call's signature."""
        from numba.core import types

        argcount = len(inspect.signature(definition).parameters) - 1  # less the typing context
        stub = compiled_only_stub(definition.__name__, argcount)
        stub.__doc__ = definition.__doc__
        codegens: dict[tuple, Callable] = {}

        def generic(template: Any, args: tuple, kws: dict) -> Any:
            result = None if kws else definition(template.context, *args)
            if result is None:
                return None
            signature, codegen = result
            codegens[tuple(signature.args)] = codegen
            return signature

        def lower(context: Any, builder: Any, sig: Any, args: Any) -> Any:
            codegen = codegens.get(tuple(sig.args))
            if codegen is None:  # typed in another process's context, e.g. a rebuilt cache entry
                codegen = definition(context.typing_context, *sig.args)[1]
            return codegen(context, builder, sig, args)

        template = type(f"{definition.__name__}_IntrinsicTemplate", (self.templates.AbstractTemplate,),
                        {"key": stub, "generic": generic})
        self.typing_registry.register(template)
        self.typing_registry.register_global(stub, types.Function(template))
        self.lowering_registry.lower(stub, *[types.Any] * argcount)(lower)
        return stub


def compiled_only_stub(name: str, argcount: int) -> Callable:
    """A Python function named ``name`` of ``argcount`` arguments that stands for an operation in compiled
    code (numba calls its registered lowering; Python calling it raises)."""
    params = ", ".join(f"a{k}" for k in range(argcount))
    namespace: dict[str, Any] = {}
    exec(f"def {name}({params}):\n    raise NotImplementedError('compiled only')\n", namespace)
    return namespace[name]


def cpu_target() -> ExtensionTarget:
    """numba's CPU target (``numba.njit``)."""
    import numba.extending as api
    from numba.core import cgutils, imputils
    from numba.core.typing import templates

    def contexts() -> tuple[Any, Any]:
        from numba.core.registry import cpu_target as target

        return target.typing_context, target.target_context

    return ExtensionTarget("cpu", api, templates, imputils, cgutils, api.models, contexts)


def cuda_target() -> ExtensionTarget | None:
    """numba-cuda's CUDA target (``numba.cuda.jit``, ``compile_ptx``); None without numba-cuda."""
    try:
        import numba.cuda.extending as api
        from numba.cuda import cgutils
        from numba.cuda.core import imputils
        from numba.cuda.typing import templates
    except ImportError:
        return None

    def contexts() -> tuple[Any, Any]:
        from numba.cuda.descriptor import cuda_target as target

        return target.typing_context, target.target_context

    return ExtensionTarget("cuda", api, templates, imputils, cgutils, api.core_models, contexts)
