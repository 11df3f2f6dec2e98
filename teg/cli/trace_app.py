"""``teg trace app``: run a whole CUDA program (built with ``nvcc -cudart shared``) without a GPU —
its host code natively, every kernel launch in the emulator — and write the traces of its launches
(:mod:`teg.app.session`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from teg.cli.errors import user_errors


@click.command("app", context_settings={"allow_interspersed_args": False})
@click.option("-o", "--out", required=True, type=click.Path(path_type=Path),
              help="trace folder (native format, one kernel per traced launch, launch order)")
@click.option("--machine", default=None, help="machine table the program's GPU is (device properties, "
              "occupancy, which SASS of the fatbinary runs); default: the table of the newest SASS the program has")
@click.option("--launches", default=None, help="launches to trace: ids and ranges counted from 1 (1-100,205), "
              "re:PATTERN or a substring of the kernel name; the others run untraced (default: all)")
@click.option("--stop-after", type=int, default=None, help="stop the program once launch N has run (the traces "
              "so far are written; teg exits 0): the first launches of a long program")
@click.option("--max-instructions", default=500_000_000, show_default=True, type=int,
              help="stop the program when one launch executes more warp instructions (endless loops)")
@click.option("--estimate", is_flag=True, help="estimate every launch, so cudaEventElapsedTime returns teg's "
              "estimated time between the events (without it: 0 ms; copies take no time either way)")
@click.option("--device-memory", type=float, default=None,
              help="GiB of device memory the program sees (default: this machine's RAM, at most 64)")
@click.option("--force", is_flag=True, help="replace OUT even if it is a file teg did not write")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- PROGRAM [ARGS]...")
@user_errors
def trace_app(out: Path, machine, launches, stop_after, max_instructions, estimate, device_memory, force, command) -> None:
    """Run PROGRAM [ARGS...] with teg's CUDA runtime in place of libcudart.so.13: the host code runs
    natively, every kernel launch runs in teg's emulator on the program's own data. The program's
    output passes through; teg exits with the program's exit status (2 when teg stops it: an API
    call or an instruction teg does not implement, --max-instructions; 1 when a kernel faulted and
    the program still exited 0). Build the program with `nvcc -cudart shared` (CUDA 13)."""
    from teg.app.session import Session

    memory = int(device_memory * (1 << 30)) if device_memory else None
    status = Session(list(command), out, machine=machine, launches=launches, max_instructions=max_instructions,
                     estimate=estimate, force=force, device_memory=memory,
                     stop_after=stop_after).run()
    sys.exit(status)
