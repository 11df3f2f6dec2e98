"""numba keys a cached function by its own source file (an entry whose callee module alone was edited
keeps its old machine code); teg.jit.stamp_sources makes the cache of the engine's entries go stale
when a module whose code is compiled into them changes as well."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ENTRY = """
from numba import njit

import callee
from teg.jit import stamp_sources


@njit(cache=True)
def entry():
    return callee.value()


stamp_sources(entry, [callee])
"""


def _call(folder: Path) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder), str(ROOT)]),
               NUMBA_CACHE_DIR=str(folder / "cache"))
    return subprocess.run([sys.executable, "-c", "import entry; print(entry.entry())"], env=env, cwd=folder,
                          capture_output=True, text=True, check=True).stdout.strip()


def _setup(folder: Path) -> Path:
    folder.mkdir()
    (folder / "entry.py").write_text(ENTRY)
    callee = folder / "callee.py"
    callee.write_text("from numba import njit\n\n\n@njit(cache=True)\ndef value():\n    return 1\n")
    return callee


def _edit(callee: Path) -> None:
    before = callee.stat()
    callee.write_text(callee.read_text().replace("return 1", "return 22"))
    os.utime(callee, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))   # a later time, as an editor gives


def test_an_edited_callee_module_recompiles_the_stamped_entry(tmp_path):
    callee = _setup(tmp_path / "stamped")
    assert _call(tmp_path / "stamped") == "1"
    _edit(callee)
    assert _call(tmp_path / "stamped") == "22"



# ------------------------------------------------------------------ link-only helpers (teg.jit.inner)

LINKED = """
import numpy as np
from numba import njit

from teg.jit import inner


@inner(cache=False)
def twice(x):
    return 2.0 * x


@inner(cache=False, forceinline=True)
def sum_twice(a):
    s = 0.0
    for v in a:
        s += twice(v)
    return s


@njit(cache=True)
def entry(a):
    return sum_twice(a) + twice(1.5)
"""


def test_link_only_helpers_are_compiled_into_their_callers_only(tmp_path):
    """A helper only jitted code calls has no machine code of its own (nothing of it reaches the
    execution engine; its caller links and optimizes its module), its caller computes the same,
    and the cached caller is loaded on the next run without compiling any of them."""
    import numpy as np

    from teg.jit import _LinkOnlyLibrary

    folder = tmp_path / "linked"
    folder.mkdir()
    (folder / "linked.py").write_text(LINKED)
    probe = """
import numpy as np
from numba.core import event
import linked
compiled = []
class L(event.Listener):
    def on_start(self, ev): compiled.append(ev.data["dispatcher"].py_func.__name__)
    def on_end(self, ev): pass
event.register("numba:compile", L())
print(linked.entry(np.arange(5.0)), sorted(compiled))
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder), str(ROOT)]),
               NUMBA_CACHE_DIR=str(folder / "cache"))
    run = lambda: subprocess.run([sys.executable, "-c", probe], env=env, cwd=folder, capture_output=True,
                                 text=True, check=True).stdout.strip()
    assert run() == "23.0 ['entry', 'sum_twice', 'twice']"
    assert run() == "23.0 []"             # the second run loads the entry from numba's cache

    sys.path.insert(0, str(folder))
    try:
        import linked
    finally:
        sys.path.remove(str(folder))
    assert linked.entry(np.arange(3.0)) == 2.0 * 3.0 + 3.0
    twice_cres = next(iter(linked.twice.overloads.values()))
    sum_cres = next(iter(linked.sum_twice.overloads.values()))
    for cres in (twice_cres, sum_cres):
        assert isinstance(cres.library, _LinkOnlyLibrary)
        assert cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name) == 0
        assert not cres.library.codegen._cg._engine.is_symbol_defined(cres.fndesc.llvm_func_name)
    # sum_twice's module holds twice's code, linked in
    defined = {f.name for f in sum_cres.library._final_module.functions if not f.is_declaration}
    assert twice_cres.fndesc.llvm_func_name in defined


# ------------------------------------------------------- loading without numba's compiler (teg.jit.njit)

LOADED = """
import numpy as np

from teg.jit import njit


@njit(cache=True)
def scaled(a, k):
    out = np.empty(a.shape[0])          # numba's runtime allocates: the loaded code needs the NRT
    for i in range(a.shape[0]):
        out[i] = a[i] * k
    return out


@njit(cache=True)
def text_hash(s):
    return hash(s)                      # the hash secret's symbols (numba.cpython.hashing)
"""


def test_cached_functions_load_without_refreshing_numbas_registries(tmp_path):
    """A warm run of a teg.jit.njit(cache=True) function loads its machine code without numba's
    ``target_context.refresh()`` (which imports every lowering registry numba has, numba.np.arraymath
    and through it scipy.linalg among them), computes the same as the cold run, and a string hash
    (code that refers to the hash secret numba.cpython.hashing registers) matches Python's."""
    folder = tmp_path / "loaded"
    folder.mkdir()
    (folder / "loaded.py").write_text(LOADED)
    probe = """
import sys
import numpy as np
import loaded
r = loaded.scaled(np.arange(4.0), 2.5)
h = loaded.text_hash("teg") == hash("teg")
hits = sum(loaded.scaled.stats.cache_hits.values()) + sum(loaded.text_hash.stats.cache_hits.values())
print(r.tolist(), h, hits, "numba.np.arraymath" in sys.modules, "numba.np.random.legacy" in sys.modules)
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder), str(ROOT)]),
               NUMBA_CACHE_DIR=str(folder / "cache"))
    run = lambda: subprocess.run([sys.executable, "-c", probe], env=env, cwd=folder, capture_output=True,
                                 text=True, check=True).stdout.strip()
    assert run() == "[0.0, 2.5, 5.0, 7.5] True 0 True True"        # cold: compiled (numba refreshed its context)
    assert run() == "[0.0, 2.5, 5.0, 7.5] True 2 False False"      # warm: both loaded, no registry imported


def test_cached_library_parses_its_bitcode_only_when_needed(tmp_path):
    """A function loaded from the cache (teg.jit._CachedLibrary) runs without its LLVM bitcode
    parsed; a jitted function compiled afterwards in the same process that calls it, and a cached
    ``inner`` function (no Python wrapper, loaded while the caller compiles), links them in (the
    bitcode parsed then) and computes the same as the cold run; and the wrapper's address is
    the same as numba's eager load gives (TEG_EAGER_BITCODE=1: the numbers and cache hits agree)."""
    folder = tmp_path / "lazy"
    folder.mkdir()
    (folder / "loaded.py").write_text(LOADED + """

from teg.jit import inner


@inner()
def twice(x):                           # cached, no Python wrapper: its symbols come from the bitcode
    return 2 * x
""")
    probe = """
import numpy as np
import loaded
from teg.jit import njit
r = loaded.scaled(np.arange(4.0), 2.5)
lib = loaded.scaled.overloads[loaded.scaled.signatures[0]].library
before = type(lib).__name__, getattr(lib, "_bitcode", None) is not None

@njit
def caller(a):
    return loaded.scaled(a, 3.0).sum() + loaded.twice(a[1])

s = caller(np.arange(4.0))
after = getattr(lib, "_bitcode", None) is not None
print(r.tolist(), s, sum(loaded.scaled.stats.cache_hits.values()) + sum(loaded.twice.stats.cache_hits.values()),
      before, after)
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder), str(ROOT)]),
               NUMBA_CACHE_DIR=str(folder / "cache"))
    env.pop("TEG_EAGER_BITCODE", None)
    run = lambda **extra: subprocess.run([sys.executable, "-c", probe], env=dict(env, **extra), cwd=folder,
                                         capture_output=True, text=True, check=True).stdout.strip()
    assert run() == "[0.0, 2.5, 5.0, 7.5] 20.0 0 ('JITCodeLibrary', False) False"     # cold: compiled
    # warm: loaded, bitcode kept unparsed until ``caller`` linked ``scaled`` in
    assert run() == "[0.0, 2.5, 5.0, 7.5] 20.0 2 ('_CachedLibrary', True) False"
    assert run(TEG_EAGER_BITCODE="1") == "[0.0, 2.5, 5.0, 7.5] 20.0 2 ('JITCodeLibrary', False) False"


def test_every_cached_teg_function_loads_with_teg_cache_loader():
    """Every ``cache=True`` jitted function of the package is made by ``teg.jit.njit``: one made by
    numba's own ``njit`` loads through ``target_context.refresh()``, and a warm ``teg estimate``
    then imports numba's registries and SciPy (about 0.4 CPU-s; it happened to the memory-system
    helpers once, unnoticed)."""
    import importlib
    import pkgutil

    from numba.core.caching import FunctionCache
    from numba.core.registry import CPUDispatcher

    import teg
    from teg.jit import _LoadOnlyCache

    plain, loaded = [], 0
    for mod in pkgutil.walk_packages(teg.__path__, "teg."):
        module = importlib.import_module(mod.name)
        for name, obj in vars(module).items():
            cache = getattr(obj, "_cache", None) if isinstance(obj, CPUDispatcher) else None
            if getattr(obj, "__module__", None) != mod.name or not isinstance(cache, FunctionCache):
                continue
            if type(cache) is _LoadOnlyCache:
                loaded += 1
            else:
                plain.append(f"{mod.name}.{name}")
    assert plain == [], f"cached with numba's own loader: {plain}"
    assert loaded > 20                        # the walk found the package's jitted functions
