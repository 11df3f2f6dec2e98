"""``teg trace run``: make a trace without a GPU by emulating the kernel's SASS (:mod:`teg.emu`)."""

from __future__ import annotations

from pathlib import Path

import click

from teg.cli.errors import user_errors

OUTPUTS_KIND = "emulator-outputs"     # teg.fileio marker kind of the buffers folder


@click.command("run")
@click.argument("source", type=click.Path(path_type=Path))
@click.option("--kernel", "-k", default=None, help="kernel name (mangled, or the demangled name); "
              "optional when the file holds one kernel")
@click.option("--grid", default="1", show_default=True, help="grid dimensions X[,Y,Z]")
@click.option("--block", required=True, help="block dimensions X[,Y,Z]")
@click.option("--shmem", default=0, show_default=True, type=int, help="dynamic shared memory bytes")
@click.option("--arg", "args", multiple=True, help="kernel argument in order: NAME=VALUE with VALUE a "
              "number, TYPE:VALUE (float32:2.5), FILE.npy, or GEN:DTYPE:SHAPE with GEN rand/zeros/ones/arange")
@click.option("--arch", default="sm_90", show_default=True, help="architecture to compile a .cu for")
@click.option("--sass", type=click.Path(path_type=Path), default=None,
              help="SASS listing to use instead of disassembling the cubin")
@click.option("--format", "fmt", type=click.Choice(["native", "accelsim"]), default="native", show_default=True)
@click.option("-o", "--out", required=True, type=click.Path(path_type=Path),
              help="trace output (native: folder or .npz; accelsim: folder)")
@click.option("--max-instructions", default=64_000_000, show_default=True, type=int,
              help="stop with an error after this many warp instructions (endless loops)")
@click.option("--outputs", type=click.Path(path_type=Path), default=None,
              help="folder for the buffers after the kernel ran, one NAME.npy each (default: OUT.outputs)")
@click.option("--force", is_flag=True, help="replace OUT even if it is a file teg did not write "
              "(a folder teg did not write is never replaced)")
@user_errors
def trace_run(source: Path, kernel, grid, block, shmem, args, arch, sass, fmt, out: Path, max_instructions, outputs,
              force) -> None:
    """Compile SOURCE (.cu, with nvcc) or read it (.cubin), execute the kernel's SASS for every block of
    the launch on the CPU, and write the instruction trace plus the output buffers (each written
    under a temporary name and renamed when complete; an existing one is replaced only if teg wrote it)."""
    import numpy as np

    import teg.trace as tt
    from teg import fileio
    from teg.emu.launch import emulate, emulate_to_trace, load_kernel
    from teg.trace.native import TraceWriter, replaceable

    fileio.prepare(out, replaceable, force)              # refuse before a long emulation, not after it
    folder = outputs or out.with_name(out.name + ".outputs")
    fileio.prepare(folder, fileio.folder_marked, force)
    prog, image = load_kernel(source, kernel, arch, sass)
    if fmt == "accelsim":
        result = emulate(prog, image, grid, block, list(args), shmem, max_rows=max_instructions)
        written = tt.write_accelsim(result.trace, out, force=force)
        buffers = result.outputs
        rows, warps = result.kernel_trace.num_rows, result.kernel_trace.num_warps
    else:                    # the native trace is streamed to its files as the launch runs
        with TraceWriter(out, force=force) as tw:
            buffers, entry = emulate_to_trace(tw, prog, image, grid, block, list(args), shmem, max_rows=max_instructions)
            written = tw.commit()
        rows, warps = entry["rows"], entry["warps"]
    with fileio.atomic_folder(folder, kind=OUTPUTS_KIND, force=force) as tmp:
        for name, arr in buffers.items():
            np.save(tmp / f"{name}.npy", arr)
    click.echo(f"{prog.name}: {rows:,} warp instructions from {warps:,} warps; trace {written}; buffers in {folder}")
