"""The static side of a kernel: ``Program`` (one per kernel) and its ``Instruction`` records.

Produced by :mod:`teg.sass.parser`; consumed by :mod:`teg.trace` (PC join), :mod:`teg.engine`
(static instruction table) and :mod:`teg.models` (kernel profile).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

MAX_DST = 8    # widest destination: .128 loads / HMMA F32 accumulators use 4, DMMA up to 8
MAX_SRC = 16   # HMMA: A fragment (4) + B fragment (2) + C accumulator (4) + predicates


@dataclass(frozen=True, slots=True)
class Operand:
    """One operand as printed. ``kind`` is one of: ``reg`` (R/UR), ``pred`` (P/UP/PT), ``sreg``
    (SR_TID.X …), ``imm`` (integer), ``fimm`` (float), ``const`` (c[bank][off]), ``mem`` ([R2.64+0x10],
    desc[UR4][R2.64], g[A1+0xb] shared operands of sm_1x), ``label`` (branch target), ``other``.
    ``regs`` are the flat register ids (see :mod:`teg.sass.registers`) the operand names, with wide
    registers expanded (``R2.64`` → R2, R3).

    Structured parts (for a functional emulator; -1 / None / 1 when absent):

    * ``reg`` — ``reg``/``pred``: flat id of the named register (RZ/PT → -1); ``mem``: the address
      register (``[R2.64+0x10]`` → R2, ``g[A1+0xb]`` → A1); ``const``: a register in the offset
      (``c[0x0][R4+0x8]`` → R4).
    * ``wide`` — 32-bit registers the named register spans: 2 for ``R2.64``, else 1; for a ``mem``
      operand the address register's width (also 2 for a global/generic address under ``.E``
      64-bit addressing, ``ATOMG.E … [R6]``). The instruction's data-width rules (``LDG.E.128``)
      are applied in ``Instruction.dst_regs``/``src_regs``, not here.
    * ``ureg`` — uniform register added to the address (``[R0+UR4]``, ``[UR4+0x8]``, ``c[0x0][UR4]``).
    * ``desc`` — memory descriptor register of ``desc[UR4][…]`` (a 64-bit pair UR4:UR5).
    * ``offset`` — immediate byte offset of a ``mem`` address (``+-0x8`` → -8) or a ``const`` offset.
    * ``bank`` — constant bank number of ``c[0x3][…]``.
    * ``scale`` — index scale of ``[R9.X4]`` (4), else 1.
    * ``select`` — sub-register selector printed after a register (``H1_H1``, ``B2``, ``U32``; GT200
      halves ``R0H`` → ``H``) or after a GT200 memory operand (``g[0x1].U16`` → ``U16``).
    * ``label`` — branch-target label name (``.L_x_3``) of a ``label`` operand; its ``value`` is the
      byte address for hex targets (``BRA 0x210``).
    * For ``imm``/``fimm`` the printed sign is folded into ``value`` (``-0x1`` → -1) and ``negated``
      stays False."""

    kind: str
    text: str
    regs: tuple[int, ...] = ()
    value: float | int | None = None
    negated: bool = False
    absolute: bool = False
    inverted: bool = False      # !P0
    reuse: bool = False         # .reuse
    space: str | None = None    # for mem operands: 'global', 'shared', 'const', 'local' where known
    reg: int = -1
    wide: int = 1
    ureg: int = -1
    desc: int = -1
    offset: int | None = None
    bank: int | None = None
    scale: int = 1
    select: str | None = None
    label: str | None = None


@dataclass(frozen=True, slots=True)
class Control:
    """Scheduling control information decoded from the encoding (sm_50+; the layout and its sources in
    :mod:`teg.sass.control`).

    ``stall`` cycles before the warp may issue again, ``yield_`` the raw yield bit, ``wbar`` / ``rbar``
    write/read dependency-barrier index (7 = none), ``wait`` the 6-bit wait mask, ``reuse`` the 4 reuse
    flags."""

    stall: int
    yield_: int
    wbar: int
    rbar: int
    wait: int
    reuse: int

    @property
    def raw(self) -> int:
        """The 21-bit control field (``reuse`` in the top 4 bits)."""
        return (self.stall | self.yield_ << 4 | self.wbar << 5 | self.rbar << 8 | self.wait << 11
                | self.reuse << 17)


@dataclass(frozen=True, slots=True)
class Instruction:
    """One static SASS instruction."""

    index: int                      # position in the kernel (0-based)
    address: int                    # byte offset printed as /*addr*/
    opcode: str                     # full opcode with modifiers: "LDG.E.128.CONSTANT"
    base: str                       # "LDG"
    modifiers: tuple[str, ...]      # ("E", "128", "CONSTANT")
    operands: tuple[Operand, ...]
    guard: str | None = None        # "P0", "!P0", "UP0", "PT", "!PT" … (None when unguarded)
    guard_reg: int = -1             # flat id of the guard predicate (-1 for none / PT)
    dst_regs: tuple[int, ...] = ()  # flat ids written (R, P, UR, UP), wide destinations expanded
    src_regs: tuple[int, ...] = ()  # flat ids read (incl. guard predicate, address registers)
    branch_target: int | None = None  # instruction index of the target (BRA/BSSY/CALL/…)
    control: Control | None = None
    mem_width: int = 0              # bytes per lane for memory instructions (from modifiers), else 0
    line: int = 0                   # 1-based line in the source text
    text: str = ""                  # the instruction text as printed (without address/encoding)


@dataclass
class Program:
    """A kernel's static instruction list plus its metadata."""

    name: str                       # mangled name as printed
    arch: str                       # "sm_90", "sm_13" (GT200) …
    instructions: list[Instruction] = field(default_factory=list)
    demangled: str | None = None
    labels: dict[str, int] = field(default_factory=dict)   # ".L_x_3" → instruction index
    source: str = ""                # file the text came from ("<stdin>" for stdin)

    @property
    def sm(self) -> int:
        """Numeric SM version (``"sm_90a"`` → 90)."""
        digits = "".join(ch for ch in self.arch.split("_", 1)[-1] if ch.isdigit())
        return int(digits) if digits else 0

    def __len__(self) -> int:
        return len(self.instructions)

    def pc_index(self) -> dict[int, int]:
        """Map byte address → instruction index."""
        return {ins.address: ins.index for ins in self.instructions}

    def table(self) -> dict[str, np.ndarray]:
        """The static instruction table as flat numpy arrays (one row per instruction), for the
        engine's lowering: ``address``, ``dst`` (N×MAX_DST, -1 padded), ``src`` (N×MAX_SRC),
        ``guard``, ``target`` (-1 when none), ``stall``, ``yield_``, ``wbar``, ``rbar``, ``wait``,
        ``has_ctrl`` and ``mem_width``."""
        n = len(self.instructions)
        dst = np.full((n, MAX_DST), -1, np.int16)
        src = np.full((n, MAX_SRC), -1, np.int16)
        cols = {k: np.zeros(n, np.int32) for k in ("stall", "yield_", "wbar", "rbar", "wait", "has_ctrl", "mem_width")}
        address = np.zeros(n, np.int64)
        guard = np.full(n, -1, np.int16)
        target = np.full(n, -1, np.int32)
        for i, ins in enumerate(self.instructions):
            address[i] = ins.address
            d = ins.dst_regs[:MAX_DST]
            s = ins.src_regs[:MAX_SRC]
            dst[i, : len(d)] = d
            src[i, : len(s)] = s
            guard[i] = ins.guard_reg
            if ins.branch_target is not None:
                target[i] = ins.branch_target
            cols["mem_width"][i] = ins.mem_width
            c = ins.control
            if c is not None:
                cols["has_ctrl"][i] = 1
                cols["stall"][i], cols["yield_"][i], cols["wbar"][i] = c.stall, c.yield_, c.wbar
                cols["rbar"][i], cols["wait"][i] = c.rbar, c.wait
            else:
                cols["wbar"][i] = cols["rbar"][i] = 7
        return {"address": address, "dst": dst, "src": src, "guard": guard, "target": target, **cols}
