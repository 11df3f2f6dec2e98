"""Which global-path accesses bypass L1 (are cached at L2 only), from the SASS opcode's kind and
modifiers.

* **Stores** write through L1 and do not allocate in it; **atomics and reductions** (ATOM, ATOMG,
  RED, REDG) resolve in L2 (Accel-Sim's ``gpu-simulator/trace-driven/trace_driven.cc`` sets ``CACHE_GLOBAL`` for every
  atomic, "all the atomics should be done at L2").
* **Loads** bypass L1 when their modifiers say so:

  - ``STRONG`` + ``GPU`` (sm_70+): ``ld.global.cg``, ``ld.relaxed.gpu``, ``ld.acquire.gpu``
    (ptxas 13.0 emits ``LDG.E.STRONG.GPU`` for all three; Accel-Sim bypasses L1 for
    ``LDG``/``LDL`` with ``STRONG`` and ``GPU``, ``trace_driven.cc``);
  - ``STRONG`` + ``SYS`` (sm_70+): ``ld.volatile``, ``ld.global.cv``, ``ld.relaxed.sys``
    (ptxas 13.0 emits ``LDG.E.STRONG.SYS``); PTX ISA "Cache operators": ``.cv`` = "don't cache
    and fetch again", and a GPU/system-scope strong load cannot be served by the SM's L1, which
    is not coherent across SMs (PTX: "multiple L1 caches are not coherent for global data");
  - ``BYPASS`` (``LDGSTS.E.BYPASS``, ``cp.async.cg``; Accel-Sim 2.0 trace reader);
  - ``CG`` / ``CV`` (pre-Volta SASS: ``LDG.E.CG`` = ``ld.global.cg``, "cache at global level
    (cache in L2 and below, not L1)"; ``LDG.E.CV`` = ``ld.global.cv`` / ``ld.volatile``).

  ``STRONG.SM`` / ``STRONG.CTA`` (``ld.global.ca``, ``ld.relaxed.cta``), ``EF`` (``.cs``), ``LU``,
  ``CONSTANT`` (``.nc``) and plain ``LDG.E`` are cached in L1 — on a machine whose L1 caches
  global loads (``memory.l1_caches_global_loads``, default true).

* **Machines whose L1 does not cache global loads** (``memory.l1_caches_global_loads: false``;
  Maxwell sm_52 and Pascal, ``isa_tables/sm_61.yaml``): a global/generic load bypasses L1 unless
  it asks for the L1/texture path with one of :data:`L1_REQUEST_LOAD_MODIFIERS`:

  - ``CI`` — ``LDG.E.CI``, the Maxwell/Pascal SASS of ``ld.global.nc`` / ``__ldg`` (the LDG cache
    field is default, ``CG``, ``CI`` or ``CV``: MaxAs ``MaxAsGrammar.pm``);
  - ``CONSTANT`` — the sm_70+ spelling of ``ld.global.nc``;
  - ``CA`` — an explicit cache-at-all-levels load (``ld.global.ca``, ``-Xptxas -dlcm=ca``) where
    the disassembly spells it.

  So plain ``LDG.E`` / ``LD.E`` (and ``.CS``, ``.LU``) are L2-only there. Source: CUDA C++
  Programming Guide, Compute Capability 5.x "Global Memory" (6.x: "behaves the same way as in
  devices of compute capability 5.x"): global loads are cached in L2; read-only data read with
  ``__ldg()`` (``ld.global.nc``) is cached in the unified L1/texture cache; other data is by
  default not cached there on 5.2/6.x, but can be with an inline-PTX cache modifier or
  ``-Xptxas -dlcm=ca``. Accel-Sim's SM6_TITANX config sets ``-gmem_skip_L1D 1``; GPGPU-Sim's
  ``ldst_unit::memory_cycle`` then bypasses L1 for every global access whose cache operator is
  not ``CACHE_L1`` (= ``.nc``), i.e. it bypasses ``.ca`` too (vs the Programming Guide, followed
  here). The L2-only modifiers above win over a request (``LDG.E.CG`` bypasses everywhere).

The policy is per static instruction: the engine's ``s_store`` flag ("1 = bypasses L1").
"""

from __future__ import annotations

#: modifier sets (all must be present) that make a global/generic load L2-only
L2_ONLY_LOAD_MODIFIERS: tuple[frozenset[str], ...] = (
    frozenset({"STRONG", "GPU"}),
    frozenset({"STRONG", "SYS"}),
    frozenset({"BYPASS"}),
    frozenset({"CG"}),
    frozenset({"CV"}),
)

#: modifiers with which a global/generic load asks for the L1/texture cache on a machine whose
#: L1 does not cache ordinary global loads (``GlobalMemory.l1_caches_global_loads`` false)
L1_REQUEST_LOAD_MODIFIERS: frozenset[str] = frozenset({"CI", "CONSTANT", "CA"})

#: address spaces whose loads go through L1 and can carry the modifiers above
GLOBAL_LOAD_SPACES = ("global", "generic")


def load_bypasses_l1(opcode: str) -> bool:
    """True when the modifiers of load ``opcode`` (``"LDG.E.64.STRONG.GPU"``) make it L2-only."""
    mods = set(opcode.split(".")[1:])
    return any(need <= mods for need in L2_ONLY_LOAD_MODIFIERS)


def load_requests_l1(opcode: str) -> bool:
    """True when load ``opcode`` asks for the L1/texture path (``LDG.E.CI``, ``LDG.E.CONSTANT``,
    ``LDG.E.CA``): see :data:`L1_REQUEST_LOAD_MODIFIERS`."""
    return not L1_REQUEST_LOAD_MODIFIERS.isdisjoint(opcode.split(".")[1:])


def bypasses_l1(opcode: str, kind: str, space: str, l1_caches_global_loads: bool = True) -> bool:
    """True when a global-path access never looks up or allocates in L1: every store and atomic,
    the loads :func:`load_bypasses_l1` marks, and — when ``l1_caches_global_loads`` is false (the
    machine's ``memory.l1_caches_global_loads``, Maxwell/Pascal) — every global/generic load that
    does not ask for L1 (:func:`load_requests_l1`). ``kind``/``space`` as in
    :class:`teg.machine.model.OpInfo`; local, texture and constant loads are never affected."""
    if kind in ("store", "atomic"):
        return True
    if kind != "load" or space not in GLOBAL_LOAD_SPACES:
        return False
    if load_bypasses_l1(opcode):
        return True
    return not l1_caches_global_loads and not load_requests_l1(opcode)
