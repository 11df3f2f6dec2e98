"""Which global-path accesses bypass L1 (are cached at L2 only), from the SASS opcode's kind and
modifiers.

* **Stores** write through L1 and do not allocate in it; **atomics and reductions** (ATOM, ATOMG,
  RED, REDG) resolve in L2 (Accel-Sim ``trace_driven.cc`` sets ``CACHE_GLOBAL`` for every atomic,
  "all the atomics should be done at L2"; nvidia_timing_facts.md / accelsim_trace_format.md §7).
* **Loads** bypass L1 when their modifiers say so:

  - ``STRONG`` + ``GPU`` (sm_70+): ``ld.global.cg``, ``ld.relaxed.gpu``, ``ld.acquire.gpu``
    (ptxas 13.0 emits ``LDG.E.STRONG.GPU`` for all three; Accel-Sim bypasses L1 for
    ``LDG``/``LDL`` with ``STRONG`` and ``GPU``, accelsim_trace_format.md §7);
  - ``STRONG`` + ``SYS`` (sm_70+): ``ld.volatile``, ``ld.global.cv``, ``ld.relaxed.sys``
    (ptxas 13.0 emits ``LDG.E.STRONG.SYS``); PTX ISA "Cache operators": ``.cv`` = "don't cache
    and fetch again", and a GPU/system-scope strong load cannot be served by the SM's L1, which
    is not coherent across SMs (PTX: "multiple L1 caches are not coherent for global data");
  - ``BYPASS`` (``LDGSTS.E.BYPASS``, ``cp.async.cg``; Accel-Sim 2.0 trace reader);
  - ``CG`` / ``CV`` (pre-Volta SASS: ``LDG.E.CG`` = ``ld.global.cg``, "cache at global level
    (cache in L2 and below, not L1)"; ``LDG.E.CV`` = ``ld.global.cv`` / ``ld.volatile``).

  ``STRONG.SM`` / ``STRONG.CTA`` (``ld.global.ca``, ``ld.relaxed.cta``), ``EF`` (``.cs``), ``LU``,
  ``CONSTANT`` (``.nc``) and plain ``LDG.E`` are cached in L1.

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

#: address spaces whose loads go through L1 and can carry the modifiers above
GLOBAL_LOAD_SPACES = ("global", "generic")


def load_bypasses_l1(opcode: str) -> bool:
    """True when the modifiers of load ``opcode`` (``"LDG.E.64.STRONG.GPU"``) make it L2-only."""
    mods = set(opcode.split(".")[1:])
    return any(need <= mods for need in L2_ONLY_LOAD_MODIFIERS)


def bypasses_l1(opcode: str, kind: str, space: str) -> bool:
    """True when a global-path access never looks up or allocates in L1: every store and atomic,
    and the loads :func:`load_bypasses_l1` marks (``kind``/``space`` as in
    :class:`teg.machine.model.OpInfo`)."""
    if kind in ("store", "atomic"):
        return True
    return kind == "load" and space in GLOBAL_LOAD_SPACES and load_bypasses_l1(opcode)
