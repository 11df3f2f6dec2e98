"""Mutation fuzzing of every input kind (issue #25): damaged copies of the repository's own fixtures
— SASS listings, cubins, Accel-Sim traces, native traces, machine tables, command lines — each run
as a ``teg`` command (benchmarks/fuzz_cases.py: forked child per case, time limit, memory cap).
Every case must end in success, a one-line error with exit 2, or exit 1 for unknown opcodes: never
a traceback, a time-out or a crash. Seeds are fixed; ``benchmarks/fuzz_campaign.py`` runs the
same generators at scale."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEED = 25
PER_KIND = 50


@pytest.fixture(scope="module")
def fuzz():
    spec = importlib.util.spec_from_file_location("teg_fuzz_cases", ROOT / "benchmarks" / "fuzz_cases.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    mod.warm_up()
    return mod


@pytest.mark.parametrize("kind", ["sass", "cubin", "accelsim", "native", "machine", "cli"])
def test_damaged_inputs_end_in_success_or_a_one_line_error(fuzz, kind, tmp_path):
    cases = fuzz.cases(kind, SEED, PER_KIND)
    for c in cases:
        c.timeout = 30.0
    outcomes = fuzz.run_cases(cases, tmp_path)
    failed = [f"{o.outcome}: {o.name}: {o.detail}" for o in outcomes if o.outcome not in fuzz.CLEAN]
    assert not failed, "\n".join(failed)
    # the mutations reach the readers: most cases are refused, and some still run
    counts = {k: sum(o.outcome == k for o in outcomes) for k in fuzz.CLEAN}
    assert counts["error"] >= PER_KIND // 4 and counts["ok"] + counts["unknown"] >= 1, counts


def test_cases_are_deterministic(fuzz):
    a = [(c.name, c.argv, sorted(c.files)) for c in fuzz.cases("native", SEED, 5)]
    b = [(c.name, c.argv, sorted(c.files)) for c in fuzz.cases("native", SEED, 5)]
    assert a == b and len({n for n, _, _ in a}) == 5


def test_runner_names_tracebacks_time_outs_and_crashes(fuzz, tmp_path):
    """The classification itself: a command that raises, one that sleeps past its limit and one
    that kills itself are reported as such (so a clean run above means something)."""
    import os
    import signal
    import time

    import click

    from teg.cli import main

    @main.command("fuzz-selftest", hidden=True)
    @click.argument("what")
    def selftest(what):
        if what == "raise":
            raise RuntimeError("boom")
        if what == "sleep":
            time.sleep(60)
        if what == "kill":
            os.kill(os.getpid(), signal.SIGKILL)

    try:
        cases = [fuzz.Case("cli", w, ["fuzz-selftest", w], timeout=2.0) for w in ("raise", "sleep", "kill", "ok")]
        got = [o.outcome for o in fuzz.run_cases(cases, tmp_path)]
    finally:
        main.commands.pop("fuzz-selftest", None)
    assert got == ["traceback", "timeout", "crash", "ok"]
