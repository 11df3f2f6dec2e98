"""``teg parse FILE``: the kernels of a SASS listing or CUDA binary, their instruction counts by unit
class, a control-code summary and the opcodes the machine table does not know."""

from __future__ import annotations

import json
import sys

import click

from teg import TegError
from teg.cli.errors import EXIT_UNKNOWN_OPCODES, user_errors
from teg.sass import Program, parse_file
from teg.sass.summary import kernel_summary


class UnknownOpcodeError(TegError):
    """``--strict``: the listing uses opcodes the machine table does not classify."""


def _names_of(p: Program) -> set[str]:
    """Names a kernel answers to: mangled, demangled, and the demangled name without its parameter
    list and return type (``void reduce_sum<float>(float const*, …)`` → ``reduce_sum<float>``)."""
    names = {p.name}
    if p.demangled:
        head = p.demangled.split("(", 1)[0].strip()
        names |= {p.demangled, head, head.rsplit(" ", 1)[-1]}
    return names


def _select(programs: list[Program], kernel: str | None, file: str) -> list[Program]:
    """Kernels named ``kernel`` (see :func:`_names_of`), or all when ``kernel`` is None."""
    if kernel is None:
        return programs
    chosen = [p for p in programs if kernel in _names_of(p)]
    if not chosen:
        names = ", ".join(sorted({p.name for p in programs})) or "none"
        raise TegError(f"no kernel named {kernel!r} in {file} (kernels: {names})")
    return chosen


class _Classifiers:
    """Machine tables by name, loaded once; ``for_program`` picks ``--machine`` or the table that
    ``teg.machine.for_arch`` suggests for the kernel's SM version."""

    def __init__(self, override: str | None):
        self.override = override
        self.loaded: dict[str, object] = {}
        self.warned: set[str] = set()

    def for_program(self, program: Program):
        import teg.machine as machine_mod

        if self.override is not None:
            name = self.override
        else:
            try:
                name = machine_mod.for_arch(program.sm)
            except TegError as exc:
                if program.arch not in self.warned:
                    self.warned.add(program.arch)
                    click.echo(f"teg: warning: {exc}; opcodes of {program.arch or 'unknown arch'} kernels "
                               f"are not classified (use --machine)", err=True)
                return None, None
        if name not in self.loaded:
            self.loaded[name] = machine_mod.load(name)
        return name, self.loaded[name]


def _text_report(file: str, records: list[dict]) -> str:
    lines = [f"{file}: {len(records)} kernel{'s' if len(records) != 1 else ''}"]
    for r in records:
        title = r["name"] + (f"  [{r['demangled']}]" if r["demangled"] else "")
        lines.append(f"{title}  {r['arch'] or '?'}  machine {r['machine'] or '-'}  "
                     f"{r['instructions']} instructions, {r['branches']} branches")
        if r["by_class"]:
            lines.append("  classes: " + ", ".join(f"{k} {v}" for k, v in r["by_class"].items()))
        c = r["control"]
        if c:
            lines.append(f"  control: {c['decoded']} decoded, stall mean {c['stall_mean']:.2f} "
                         f"(total {c['stall_total']}), yield-hint {c['yield_hint']}, write barriers "
                         f"{c['write_barrier']}, read barriers {c['read_barrier']}, waits {c['wait']}, "
                         f"reuse {c['reuse']}")
        else:
            lines.append("  control: none in this listing")
        if r["machine"]:
            unknown = r["unknown_opcodes"]
            lines.append("  unknown opcodes: " + (", ".join(f"{k} x{v}" for k, v in unknown.items()) or "none"))
    return "\n".join(lines)


@click.command("parse")
@click.argument("file")
@click.option("--kernel", "kernel", metavar="NAME", help="Only this kernel (mangled or demangled name).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (docs/formats.md, 'teg parse --json').")
@click.option("--machine", "machine", metavar="NAME",
              help="Machine table that classifies opcodes (default: the one suggested for each kernel's SM).")
@click.option("--strict", is_flag=True, help="Opcodes the machine table does not know are an error.")
@user_errors
def parse_cmd(file: str, kernel: str | None, as_json: bool, machine: str | None, strict: bool) -> None:
    """Parse FILE (a cuobjdump/nvdisasm listing, a cubin/fatbin/executable, or - for stdin) and
    summarize its kernels."""
    programs = _select(parse_file(file), kernel, file)
    if not programs:
        raise TegError(f"no SASS kernels found in {file}")
    tables = _Classifiers(machine)
    records = []
    for p in programs:
        name, table = tables.for_program(p)
        records.append(kernel_summary(p, table.classify if table is not None else None, name))
    unknown = [(r["name"], op, n) for r in records for op, n in r["unknown_opcodes"].items()]
    if unknown:
        listed = ", ".join(f"{op} x{n} ({k})" for k, op, n in unknown)
        if strict:
            raise UnknownOpcodeError(f"{len(unknown)} unknown opcode(s) in {file}: {listed}")
        click.echo(f"teg: warning: unknown opcodes (classified 'unknown'): {listed}", err=True)
    if as_json:
        click.echo(json.dumps({"source": file, "kernels": records}, indent=2))
    else:
        click.echo(_text_report(file, records))
    if unknown:
        sys.exit(EXIT_UNKNOWN_OPCODES)
