"""The ``teg`` console script: imports the command line and runs it, so that a Ctrl-C that
arrives while the (numpy, numba, click) imports are still running ends like one during the run —
one line, exit status 130 (:data:`teg.cli.EXIT_INTERRUPTED`) — instead of a KeyboardInterrupt
traceback from the middle of an import. Kept apart from :mod:`teg.cli` so that nothing heavy is
imported before the handler is in place."""

from __future__ import annotations

import sys


def run() -> None:
    try:
        from teg.cli import main
    except KeyboardInterrupt:
        sys.stderr.write("teg: interrupted\n")
        sys.exit(130)
    main(prog_name="teg")
