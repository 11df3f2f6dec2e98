"""teg's numba decorators: :func:`njit` (numba's, with a cache that loads machine code without
setting up numba's compiler) and :func:`inner` (helpers compiled into their callers only); and the
freshness of a cached entry's callees (:func:`stamp_sources`)."""

from __future__ import annotations

import os

import numba
from numba.core import codegen as _codegen
from numba.core.caching import FunctionCache
from numba.core.compiler import CompilerBase, DefaultPassBuilder
from numba.core.compiler_machinery import LoweringPass, register_pass
from numba.core.typed_passes import AnnotateTypes


class _LoadOnlyCache(FunctionCache):
    """numba's on-disk cache of a function, loading without refreshing numba's target context.

    numba's ``FunctionCache.load_overload`` calls ``target_context.refresh()`` before it reads a
    cached function: that imports every lowering and typing registry numba has (its random
    generators, polynomials, linear algebra — ``numba.np.arraymath`` imports ``scipy.linalg``
    when SciPy is installed — typed containers, cffi, …), which only compiling uses, and
    compiling refreshes the context itself (``CompilerBase.__init__``). Loaded machine code needs
    only the symbols its calls resolve to: numba's runtime (``rtsys.initialize``: the NRT
    functions), the C helpers and math functions registered when the target context was made,
    and the hash secret that ``numba.cpython.hashing`` registers when imported (imported here
    only for code that refers to it); the modules of the implementations it calls are imported
    by unpickling their environments. Otherwise the cache is read as numba reads it."""

    def load_overload(self, sig, target_context):
        from numba.core.runtime import rtsys

        rtsys.initialize(target_context)
        with self._guard_against_spurious_io_errors():
            return self._load_overload(sig, target_context)

    def _load_overload(self, sig, target_context):
        if not self._enabled:
            return None
        data = self._cache_file.load(self._index_key(sig, target_context.codegen()))
        if data is None:
            return None
        try:            # CompileResult._reduce: the library first, (name, "object", (object code, bitcode))
            hashes = _HASH_SECRET in data[0][2][0]
        except (IndexError, TypeError):
            hashes = True
        if hashes:
            import numba.cpython.hashing  # noqa: F401
        codegen = target_context.codegen()
        try:
            libdata, fndesc = data[0], data[1]
            lazy = libdata[1] == "object"
        except (IndexError, TypeError):
            lazy = False
        if not lazy or os.environ.get("TEG_EAGER_BITCODE"):
            return self._impl.rebuild(target_context, data)
        # numba's rebuild with the library made by _CachedLibrary.load (the one call it makes to
        # ``codegen.unserialize_library``, redirected for this load only)
        codegen.unserialize_library = lambda state: _CachedLibrary.load(
            codegen, state, fndesc.llvm_cpython_wrapper_name)
        try:
            return self._impl.rebuild(target_context, data)
        finally:
            del codegen.unserialize_library


class _CachedLibrary(_codegen.JITCodeLibrary):
    """A code library loaded from numba's cache whose LLVM bitcode is parsed only when something
    needs it. numba's cache holds a function's machine code and the bitcode of its module (for
    linking it into a jitted caller); numba parses that bitcode at every load to learn the symbols
    the library defines, although a function called from Python needs only its wrapper's address
    from the loaded machine code (``simulate``'s bitcode is 0.67 MB). This library records the
    wrapper's name as defined and parses the bitcode when a caller links it in or another of its
    symbols is asked for; the machine code is loaded as numba loads it (the execution engine's
    object cache hands it over for the library's empty module)."""

    @classmethod
    def load(cls, codegen, state, wrapper_name):
        name, kind, (object_code, bitcode) = state
        lib = codegen.create_library(name)
        lib.__class__ = cls
        lib.enable_object_caching()
        lib._set_compiled_object(object_code)
        lib._bitcode = bitcode
        lib._finalize_final_module()
        if wrapper_name.encode() in object_code:
            # defined there (its name is in the object's symbol table; nothing else refers to a
            # wrapper); a function without one (``inner``) is answered from the bitcode, as numba does
            codegen._engine._defined_symbols.add(wrapper_name)
        return lib

    def _parse_bitcode(self):
        if self._bitcode is not None:
            from llvmlite import binding as ll

            self._shared_module = ll.parse_bitcode(self._bitcode)
            self._bitcode = None
            self._codegen._engine._load_defined_symbols(self._shared_module)

    def _get_module_for_linking(self):
        self._parse_bitcode()
        return self._shared_module

    def get_pointer_to_function(self, name):
        if not self._codegen._engine.is_symbol_defined(name):
            self._parse_bitcode()
        return super().get_pointer_to_function(name)


_HASH_SECRET = b"_numba_hashsecret_"


def njit(func=None, **options):
    """``numba.njit``; with ``cache=True`` the dispatcher's cache loads with
    :class:`_LoadOnlyCache` (a warm run does not set up numba's compiler). Used bare (``@njit``) or
    with options."""
    if func is None:
        return lambda f: njit(f, **options)
    dispatcher = numba.njit(**options)(func)
    cache = getattr(dispatcher, "_cache", None)
    if type(cache) is FunctionCache:
        cache.__class__ = _LoadOnlyCache
    return dispatcher


class _LinkOnlyLibrary(_codegen.JITCodeLibrary):
    """The code library of a function that only jitted callers use, whose LLVM module is linked into
    each caller's and optimized and compiled to machine code there. numba finalizes every library
    on its own: it optimizes its module (its callees linked in) at -O3 and emits its machine code,
    which for a helper nobody calls from Python is wasted — its caller links the module and
    optimizes it again, and a helper called from helpers is optimized once per level of the call
    tree. This library keeps the function-level passes (run when the module is added), and
    finalizing it only links its callees in."""

    def _optimize_functions(self, ll_module):
        """numba's function passes (at ``NUMBA_OPT``); ``TEG_HELPER_OPT=n`` in the environment runs
        them at -On instead, for ``benchmarks/cold_compile.py --variant`` (measured 2026-11-29:
        -O1 saves about 4.5 of the cold start's 35 CPU-s, the engine's entry then executing 4 %
        more x86 instructions per simulated one; -O0 saves nothing, the module passes taking
        longer on the raw IR)."""
        level = os.environ.get("TEG_HELPER_OPT")
        if level is None:
            return super()._optimize_functions(ll_module)
        ll_module.data_layout = self._codegen._data_layout
        for func in ll_module.functions:
            fpm, pb = self._codegen._function_pass_manager(opt=int(level))
            fpm.run(func, pb)

    def _optimize_final_module(self):
        """Nothing: the caller's library optimizes this module once it is linked in."""

    def _finalize_final_module(self):
        self._finalize_dynamic_globals()
        self._verify_declare_only_symbols()
        self._finalized = True

    def get_pointer_to_function(self, name):
        return 0        # no machine code: never called from Python (no wrappers)

    @property
    def codegen(self):
        return _NoEnvCodegen(self._codegen)


class _NoEnvCodegen:
    """The codegen, but for ``set_env``: a link-only function's environment global is not in the
    execution engine (its caller's copy is what runs; numba sets the caller's)."""

    def __init__(self, codegen):
        self._cg = codegen

    def set_env(self, env_name, env):
        """Nothing: the caller's environment global is the one that runs."""

    def __getattr__(self, name):
        return getattr(self._cg, name)


@register_pass(mutates_CFG=False, analysis_only=False)
class _UseLinkOnlyLibrary(LoweringPass):
    """Before numba's native lowering: the function's code goes into a :class:`_LinkOnlyLibrary`."""

    _name = "teg_link_only_library"

    def __init__(self):
        LoweringPass.__init__(self)

    def run_pass(self, state):
        if state.library is None:
            state.library = _LinkOnlyLibrary(state.targetctx.codegen(), state.func_id.func_qualname)
        return True


class _LinkOnlyCompiler(CompilerBase):
    """numba's nopython pipeline with :class:`_UseLinkOnlyLibrary` before the lowering."""

    def define_pipelines(self):
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state)
        pm.add_pass_after(_UseLinkOnlyLibrary, AnnotateTypes)
        pm.finalize()
        return [pm]


def inner(**options):
    """``njit(cache=True, **options)`` for a function that only jitted code calls: compiled
    without numba's Python and C entry points (the wrappers a call from Python goes through,
    which a jitted caller never uses; generating them is a good part of a small function's
    compile time, about 1 s of the engine's cold start). Such a function cannot be called from
    Python. ``cache=False`` leaves it out of numba's on-disk cache (it is compiled into the cached
    function that calls it) and makes it link-only (:class:`_LinkOnlyLibrary`: no optimization of
    its own module and no machine code of its own; its callers' do both, once, with it inlined or
    linked in). ``TEG_NO_LINKONLY=1`` in the environment gives numba's own finalization instead
    (for ``benchmarks/startup.py --variants``)."""
    options = {"cache": True, **options}
    if not options["cache"] and not os.environ.get("TEG_NO_LINKONLY"):
        options["pipeline_class"] = _LinkOnlyCompiler
    return njit(**options, no_cpython_wrapper=True, no_cfunc_wrapper=True)


def stamp_sources(dispatcher, modules) -> None:
    """Make the on-disk cache of the jitted ``dispatcher`` stale whenever the source file of any of
    ``modules`` changes, not only its own: numba keys a cached function by its own file's time and
    size, but the cached machine code holds its callees' too (inlined or linked in), so an edit of
    a callee's module alone would leave the old code in use. The stamp numba compares on load
    becomes the pair of its own and ``(name, mtime, size)`` of each of those files."""
    files = sorted({os.path.abspath(m.__file__) for m in modules})
    stamp = tuple((os.path.basename(f), os.stat(f).st_mtime, os.stat(f).st_size) for f in files)
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    if cache_file is not None and hasattr(cache_file, "_source_stamp"):
        cache_file._source_stamp = (cache_file._source_stamp, stamp)
