"""SASS parser speed: generate a large cuobjdump-style listing and print instruction lines parsed
per second (target: >= 200,000 on one core).

The listing is built from the nvcc-compiled fixtures (tests/fixtures/sass/kernels.sm_*.sass, every
arch), each copy of a kernel under a new name. Two listings are measured (or one, with ``--fresh`` /
``--repeated``): "fresh registers" renumbers each copy's general registers by a random offset, so
about half of the instruction texts are new to the parser's per-text caches (the stress case);
"repeated kernels" keeps them verbatim (the cache-friendly case of a binary holding many copies of
the same kernels). Each instruction is two lines (text + control word), as
cuobjdump prints sm_70+ code. Two rates are printed per listing: instruction lines per second (the
target's unit) and all lines per second (instruction, control-word and header lines). Times are CPU
seconds of this process (``time.process_time``), the best of ``--repeat`` runs (default 3), the
parser's memo caches cleared before each run (``teg.sass.parser.clear_caches``).

    python benchmarks/parse_speed.py [--instructions N] [--repeat R] [--fresh | --repeated]
                                     [--min-rate RATE] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "sass"
_FUNCTION = re.compile(r"^\t\tFunction : (\S+)$", re.M)
_REG = re.compile(r"\bR(\d{1,3})\b")
_ADDR_LINE = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/", re.M)


def _kernels() -> list[tuple[str, str]]:
    """(header, body) of every kernel in the cuobjdump fixtures."""
    out = []
    for path in sorted(FIXTURES.glob("kernels.sm_*[0-9].sass")):
        text = path.read_text()
        arch = re.search(r"code for (sm_\d+)", text).group(1)
        parts = _FUNCTION.split(text)
        for name, body in zip(parts[1::2], parts[2::2]):
            out.append((arch, name, body))
    return out


def generate(instructions: int, seed: int = 1, shift_registers: bool = True) -> str:
    """A listing of at least ``instructions`` instructions (see module docstring); without
    ``shift_registers`` the kernels repeat verbatim (only their names change)."""
    rng = random.Random(seed)
    kernels = _kernels()
    chunks = []
    total = 0
    copy = 0
    while total < instructions:
        arch, name, body = kernels[copy % len(kernels)]
        shift = rng.randrange(0, 160)
        if shift_registers:
            body = _REG.sub(lambda m: f"R{int(m.group(1)) + shift}" if int(m.group(1)) < 64 else m.group(0), body)
        chunks.append(f"\n\tcode for {arch}\n\t.target\t{arch}\n\n\t\tFunction : {name}_copy{copy}{body}")
        total += len(_ADDR_LINE.findall(body))
        copy += 1
    return "".join(chunks)


def reference_loop_seconds() -> float:
    """CPU seconds of a plain 10-million-iteration Python loop: a yardstick for this machine (about
    0.4 s on an unloaded current desktop core with CPython 3.11), to compare rates across machines."""
    t0 = time.process_time()
    acc = 0
    for i in range(10_000_000):
        acc += i
    return time.process_time() - t0


def measure(instructions: int, shift_registers: bool, repeat: int) -> dict:
    """Best-of-``repeat`` CPU time of :func:`teg.sass.parse_text` on a generated listing."""
    from teg.sass import parser

    text = generate(instructions, shift_registers=shift_registers)
    n_lines = text.count("\n") + 1
    best = float("inf")
    programs = []
    for _ in range(repeat):
        parser.clear_caches()
        programs = []           # drop the previous run's objects before timing
        t0 = time.process_time()
        programs = parser.parse_text(text, source="generated", demangle=False)
        best = min(best, time.process_time() - t0)
    n_instr = sum(len(p) for p in programs)
    return {
        "listing": "fresh registers" if shift_registers else "repeated kernels",
        "instructions": n_instr,
        "lines": n_lines,
        "bytes": len(text),
        "distinct_instruction_texts": len({ins.text for p in programs for ins in p.instructions}),
        "cpu_seconds": round(best, 4),
        "instruction_lines_per_s": round(n_instr / best),
        "all_lines_per_s": round(n_lines / best),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instructions", type=int, default=300_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--min-rate", type=float, default=0.0,
                    help="exit 1 when a listing parses at fewer instruction lines per second")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--fresh", action="store_true", help="only the renumbered-registers listing")
    which.add_argument("--repeated", action="store_true", help="only the verbatim-repeated listing")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))

    modes = [True] if args.fresh else [False] if args.repeated else [True, False]
    results = [measure(args.instructions, shift, args.repeat) for shift in modes]
    reference = round(reference_loop_seconds(), 3)
    if args.json:
        print(json.dumps({"results": results, "reference_loop_s": reference, "repeat": args.repeat}))
    else:
        print(f"CPU seconds, best of {args.repeat} runs, one core, caches cleared before each run")
        head = ("listing", "instructions", "all lines", "MB", "distinct texts", "CPU s",
                "instruction lines/s", "all lines/s")
        rows = [(r["listing"], f"{r['instructions']:,}", f"{r['lines']:,}", f"{r['bytes'] / 1e6:.1f}",
                 f"{r['distinct_instruction_texts']:,}", f"{r['cpu_seconds']:.3f}",
                 f"{r['instruction_lines_per_s']:,}", f"{r['all_lines_per_s']:,}") for r in results]
        widths = [max(len(row[i]) for row in (head, *rows)) for i in range(len(head))]
        for row in (head, *rows):
            print("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))))
        print("target: >= 200,000 instruction lines/s; all lines also counts control-word and header lines")
        print(f"reference loop (10M Python iterations): {reference} s CPU (about 0.4 s on an unloaded core)")
    return 0 if all(r["instruction_lines_per_s"] >= args.min_rate for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
