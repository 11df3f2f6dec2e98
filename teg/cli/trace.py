"""``teg trace``: inspect and convert instruction traces (Accel-Sim text ↔ native format).

The click group is :data:`trace_group`; ``teg trace run`` (the functional emulator), ``teg trace
app`` and ``teg trace cache`` live in modules of their own, imported when they run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from teg.cli import LazyGroup
from teg.cli.errors import EXIT_INCOMPLETE, EXIT_UNKNOWN_OPCODES, user_errors

LARGE_INPUT_BYTES = 16 << 20    # show a progress bar (tqdm, if installed) above this input size


@click.group("trace", cls=LazyGroup, lazy={"run": "teg.cli.trace_run:trace_run", "app": "teg.cli.trace_app:trace_app",
                                           "cache": "teg.cli.trace_cache:trace_cache"})
def trace_group() -> None:
    """Inspect and convert instruction traces (NVBit/Accel-Sim text, teg native)."""


def _machine_for(kt, override):
    """The machine used to classify a kernel's opcodes: ``--machine`` (errors are reported), else
    the table suggested by the binary version; None when no table applies or can be loaded."""
    from teg import TegError
    from teg.trace.summary import suggest_machine

    try:
        import teg.machine as tm
    except ImportError:
        if override:
            raise
        return None
    if override:
        return tm.load(override)
    name = suggest_machine(kt.info)
    if name is None:
        return None
    try:
        return tm.load(name)
    except (TegError, FileNotFoundError):
        return None


def _load_kernels(refs) -> list:
    """The kernel traces of an application's ``refs``, in launch order, under a progress bar (when
    tqdm is installed)."""
    from teg.analysis.executors import progress_bar
    from teg.trace.application import load_kernel

    bar = progress_bar(len(refs), "kernels")
    kernels = []
    for ref in refs:
        kernels.append(load_kernel(ref))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return kernels


def _input_size(path: Path) -> int:
    """Bytes of trace text behind ``path`` (a kernelslist.g counts the files next to it)."""
    folder = path if path.is_dir() else path.parent if path.name == "kernelslist.g" else None
    if folder is not None:
        return sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
    return path.stat().st_size if path.is_file() else 0


@trace_group.command("info")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="machine-readable output")
@click.option("--machine", default=None, help="machine table for unit classes and memory spaces "
              "(default: the one suggested by the kernel's binary version)")
@click.option("--kernel", "kernel_name", default=None, help="only the kernel whose name or id matches (an "
              "application: kernels by id list/range 1,4-9, re:PATTERN or name substring)")
@click.option("--full", is_flag=True, help="an application: every kernel's statistics, not one line per kernel")
@user_errors
def trace_info(path: Path, as_json: bool, machine: str | None, kernel_name: str | None, full: bool) -> None:
    """Kernels, launch geometry and dynamic instruction statistics of a trace.

    PATH is a kernelslist.g, its folder, one .traceg[.xz], or a native trace. An application
    (several kernels, or kernels listed but missing) gets one line per kernel; missing kernels
    are named and make the exit status 1."""
    import teg.trace as tt
    from teg.trace.application import selected_application
    from teg.trace.summary import kernel_summary

    found = selected_application(path, kernel_name)    # None: one kernel, nothing missing
    if found is None:
        tr = tt.load(path, progress=_input_size(path) > LARGE_INPUT_BYTES)
        refs, memcpy, missing = [], tr.memcpy, []
        kernels = [tr.kernel(kernel_name)] if kernel_name is not None else tr.kernels
    else:
        refs, kernels, memcpy, missing = found.kernels, _load_kernels(found.kernels), found.memcpy, found.missing
    summaries = [kernel_summary(kt, _machine_for(kt, machine)) for kt in kernels]
    for s, ref in zip(summaries, refs):
        s["demangled"] = ref.demangled
    if as_json:
        doc = {"source": str(path), "memcpy": [list(m) for m in memcpy], "kernels": summaries}
        if found is not None:
            doc["missing"] = [{"id": k.kernel_id, "file": k.path, "line": k.line} for k in missing]
        click.echo(json.dumps(doc, indent=1))
    elif found is not None and not full and (len(kernels) > 1 or missing):
        from teg.report.application import trace_lines_text
        click.echo(trace_lines_text(str(path), summaries, missing))
    else:
        click.echo(f"{path}: {len(kernels)} kernel(s), {len(memcpy)} host-to-device copies")
        for s in summaries:
            click.echo(_format_kernel(s))
    unknown = sorted({op for s in summaries for op in s.get("unknown_opcodes", ())})
    if unknown:
        click.echo(f"teg: warning: opcodes unknown to the machine table: {', '.join(unknown)}", err=True)
        sys.exit(EXIT_UNKNOWN_OPCODES)
    if missing:
        sys.exit(EXIT_INCOMPLETE)


def _format_kernel(s: dict) -> str:
    g, b = s["grid"], s["block"]
    lines = [f"\nkernel {s['id']}: {s['name']}",
             f"  grid ({g[0]},{g[1]},{g[2]})  block ({b[0]},{b[1]},{b[2]})  blocks traced {s['blocks']}  "
             f"warps {s['warps']}  shmem {s['shmem']} B  regs {s['nregs']}  binary {s['binary_version']}  "
             f"tracer v{s['tracer_version']}",
             f"  warp instructions {s['warp_instructions']:,}  memory {s['memory_instructions']:,}  "
             f"avg active lanes {s['avg_active_lanes']:.2f}"]
    if s["classified"]:
        total = max(s["warp_instructions"], 1)
        lines.append(f"  mix by unit class ({s['machine']}): " +
                     ", ".join(f"{k} {v:,} ({100 * v / total:.1f}%)" for k, v in s["mix"].items()))
        if s["memory_by_space"]:
            lines.append("  memory by space: " + ", ".join(f"{k} {v:,}" for k, v in s["memory_by_space"].items()))
        spr = s.get("sectors_per_request")
        if spr:
            lines.append(f"  global requests {s['global_requests']:,} (loads {s['global_load_requests']:,}, "
                         f"stores {s['global_store_requests']:,}, atomics {s['global_atomic_requests']:,}): "
                         f"32-B sectors per request mean {spr['mean']:.2f}, min {spr['min']}, max {spr['max']}")
        if s["unknown_opcodes"]:
            lines.append(f"  opcodes unknown to {s['machine']}: " + ", ".join(s["unknown_opcodes"]))
    else:
        lines.append("  (no machine table for this binary version: use --machine to classify opcodes)")
    top = list(s["opcodes"].items())[:8]
    lines.append("  top opcodes: " + ", ".join(f"{k} {v:,}" for k, v in top))
    return "\n".join(lines)


@trace_group.command("convert")
@click.argument("src", type=click.Path(path_type=Path))
@click.argument("out", type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="replace OUT even if it is a file teg did not write "
              "(a folder teg did not write is never replaced)")
@user_errors
def trace_convert(src: Path, out: Path, force: bool) -> None:
    """Convert SRC to OUT: Accel-Sim (kernelslist.g, folder or .traceg[.xz]) → native trace
    (a folder, or one file if OUT ends in .npz); a native trace → an Accel-Sim folder. OUT is
    written under a temporary name and renamed when complete; it replaces only a trace teg wrote."""
    import teg.trace as tt

    if not src.exists():
        raise FileNotFoundError(f"{src}: no such file or folder")
    result = tt.convert(src, out, progress=_input_size(src) > LARGE_INPUT_BYTES, force=force)
    click.echo(f"wrote {result}")
