"""Whole applications (teg/trace/application.py, teg/analysis/kernel_task.py, teg/analysis/application.py,
teg/report/application.py, teg/cli/target.py, app_report.py, app_sweep.py):
reading a kernel list with missing files, kernel selection, short names, the totals, and
``teg estimate`` / ``teg whatif`` / ``teg trace info`` on the real partial PyTorch application."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from teg.analysis.application import summarize
from teg.analysis.kernel_task import KernelEstimate, KernelRow, KernelWhatIfs, Saving
from teg.trace.application import ApplicationError, KernelRef, open_application, select
from teg.sass.demangle import short_name
from teg.cli import main

TORCH = Path(__file__).parent / "data" / "traces" / "dp-performance-accel-sim" / "simpletorch"
FULL_LIST = TORCH / "kernelslist.full.g"
IDS = [1, 4, 5, 6, 8, 87]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture
def partial(tmp_path):
    """kernel-1, kernel-4 present; kernel-2 (line 2) and kernel-3 (line 4) listed but absent."""
    for n in (1, 4):
        shutil.copy(TORCH / f"kernel-{n}.traceg", tmp_path)
    (tmp_path / "kernelslist.g").write_text("kernel-1.traceg\nkernel-2.traceg\nkernel-4.traceg\nkernel-3.traceg\n")
    return tmp_path


# ---- reading and selecting ------------------------------------------------------------------------

def test_open_application_lists_the_kernels_in_launch_order():
    app = open_application(TORCH)
    assert [k.kernel_id for k in app.kernels] == IDS
    assert [k.position for k in app.kernels] == list(range(6))
    assert app.missing == [] and app.streams == [0]
    k87 = app.kernels[5]
    assert k87.grid == (1, 1, 1) and k87.block == (8, 1, 1) and k87.name.startswith("_ZN2at6native13reduce_kernel")


def test_the_untrimmed_list_names_1095_missing_kernels_at_their_lines():
    """The original kernelslist.g of the run lists kernel-1 … kernel-1101, line N naming kernel-N."""
    app = open_application(FULL_LIST)
    assert [k.kernel_id for k in app.kernels] == IDS
    assert [k.position for k in app.kernels] == [i - 1 for i in IDS]
    assert len(app.missing) == 1101 - 6
    assert all(k.line == k.kernel_id == k.position + 1 and not k.present for k in app.missing)
    assert {k.kernel_id for k in app.missing} == set(range(1, 1102)) - set(IDS)


def test_partial_list_keeps_the_present_kernels(partial):
    app = open_application(partial)
    assert [(k.kernel_id, k.position) for k in app.kernels] == [(1, 0), (4, 2)]
    assert [(k.kernel_id, k.position, k.line, Path(k.path).name) for k in app.missing] == \
        [(2, 1, 2, "kernel-2.traceg"), (3, 3, 4, "kernel-3.traceg")]


def test_select_by_ids_ranges_regex_and_substring():
    app = open_application(TORCH)
    ids = lambda spec: [k.kernel_id for k in select(app, spec).kernels]   # noqa: E731
    assert ids(None) == IDS
    assert ids("87") == [87]
    assert ids("1,4-6") == [1, 4, 5, 6]
    assert ids("re:reduce_kernel") == [5, 87]
    assert ids("re:^_ZN2at6native29") == [4, 6]
    assert ids("FillFunctor") == [6]
    if app.kernels[0].demangled:                  # c++filt present: the demangled name matches too
        assert ids("at::native::reduce_kernel<512") == [5, 87]
    with pytest.raises(ApplicationError, match="no kernel matches --kernel 'nope'"):
        select(app, "nope")
    with pytest.raises(ApplicationError, match="bad regular expression"):
        select(app, "re:(")
    with pytest.raises(ApplicationError, match="runs backwards"):
        select(app, "9-3")


def test_missing_kernels_follow_id_selections_only(partial):
    app = open_application(partial)
    assert [k.kernel_id for k in select(app, "2").missing] == [2]       # an id selects a missing kernel
    assert select(app, "2").kernels == []
    assert [k.kernel_id for k in select(app, "1").missing] == []
    assert len(select(app, "elementwise").missing) == 2                 # their names are unknown


def test_short_name():
    assert short_name("matmul_abt") == "matmul_abt"
    assert short_name("void saxpy(int, float, float*, float*)") == "saxpy"
    assert short_name("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, unsigned int> >"
                      "(at::native::ReduceOp<float, unsigned int>)") == "reduce_kernel<512, 1, ReduceOp<float, unsigned int>>"
    lam = ("void at::native::vectorized_elementwise_kernel<4, at::native::mse_kernel_cuda(at::TensorIteratorBase&)"
           "::{lambda()#1}::operator()() const::{lambda(float, float)#1}, at::detail::Array<char*, 3> >(int)")
    assert short_name(lam, 200) == "vectorized_elementwise_kernel<4, mse_kernel_cuda, Array<char*, 3>>"
    assert short_name(lam, 20) == "vectorized_elementw…" and len(short_name(lam, 20)) == 20


# ---- totals ---------------------------------------------------------------------------------------

def _ref(pos, kid):
    return KernelRef(position=pos, kernel_id=kid, name=f"k{kid}", grid=(1, 1, 1), block=(32, 1, 1), stream=0,
                     path="x")


def _row(pos, kid, cycles, instr, clk=1000.0, error=None, whatif=None):
    """A kernel that ran (a plain estimate, or what-ifs: mechanism → (cycles, saved, schedule)), or
    failed with ``error``."""
    if error is not None:
        outcome = None
    elif whatif is not None:
        outcome = KernelWhatIfs({m: Saving(*w) for m, w in whatif.items()}, cycles, cycles / clk)
    else:
        outcome = KernelEstimate(cycles, cycles / clk, instr, instr / cycles, "", 0, {})
    return KernelRow(position=pos, id=kid, name=f"k{kid}", demangled=None, grid=(1, 1, 1), block=(32, 1, 1), stream=0,
                     machine="m", error=error, clock_mhz=clk, outcome=outcome)


def test_totals_add_the_kernels_one_after_another():
    from teg.trace.application import Application

    app = Application("app", [_ref(0, 1), _ref(1, 2), _ref(2, 3)], [KernelRef(3, 9, "", (0, 0, 0), (0, 0, 0), 0,
                                                                                "kernel-9.traceg", present=False,
                                                                                line=4)])
    rows = [_row(2, 3, 500, 100), _row(0, 1, 1500, 300), _row(1, 2, 1, 0, error="boom")]
    rep = summarize(app, rows)
    t = rep.totals()
    assert (t.kernels, t.cycles, t.instructions, t.missing, t.failed) == (2, 2000, 400, 1, 1)
    assert t.time_us == pytest.approx(2.0) and t.ipc == pytest.approx(0.2)
    assert [r.id for r in rep.by_time()] == [1, 3]
    assert [rep.share(r) for r in rep.by_time()] == [pytest.approx(0.75), pytest.approx(0.25)]
    assert not rep.complete


def test_mechanism_savings_add_up_over_the_kernels():
    """Kernel 1: 1000 cycles at 1000 MHz saves 400 without bank conflicts; kernel 2: 3000 cycles at
    500 MHz saves 600 → 0.4 + 1.2 = 1.6 µs of 1 + 6 = 7 µs; speedup 7 / 5.4."""
    from teg.trace.application import Application

    w1 = {"bank_conflicts": (600, 400, "free")}
    w2 = {"bank_conflicts": (2400, 600, "replay")}
    rows = [_row(0, 1, 1000, 10, whatif=w1), _row(1, 2, 3000, 10, clk=500.0, whatif=w2)]
    rep = summarize(Application("app", [_ref(0, 1), _ref(1, 2)]), rows)
    (m,) = rep.mechanisms()
    assert m.saved_cycles == 1000 and m.saved_us == pytest.approx(1.6)
    assert m.share == pytest.approx(1.6 / 7) and m.speedup == pytest.approx(7 / 5.4)
    assert [(g.id, g.saved_us) for g in m.top] == [(2, pytest.approx(1.2)), (1, pytest.approx(0.4))]
    assert rep.totals().instructions is None          # what-if runs count no instructions


def test_a_kernel_row_s_json_has_what_its_run_reached():
    """A kernel row's JSON (KernelRow.data): the launch, clock_mhz once the kernel was lowered, the
    outcome's fields once it ran; the CSV line of a failed kernel leaves its results empty."""
    from teg.report.application import KernelLine

    ran = _row(0, 1, 1000, 10)
    assert list(ran.data()) == ["position", "id", "name", "demangled", "grid", "block", "stream", "machine", "error",
                                "warnings", "clock_mhz", "cycles", "time_us", "instructions", "ipc", "top_stall",
                                "top_stall_cycles", "stalls"]
    assert ran.data()["grid"] == [1, 1, 1] and ran.data()["warnings"] == []
    wi = _row(0, 1, 1000, 10, whatif={"bank_conflicts": (600, 400, "free")})
    assert list(wi.data())[10:] == ["clock_mhz", "whatif", "cycles", "time_us"]
    assert wi.data()["whatif"] == {"bank_conflicts": {"cycles": 600, "saved": 400, "schedule": "free"}}
    lowered = _row(0, 1, 1000, 10, error="deadlock")
    assert list(lowered.data())[-1] == "clock_mhz" and lowered.cycles is None
    header = KernelRef(0, 1, "k1", (1, 1, 1), (32, 1, 1), 0, "x")
    failed = KernelRow.of(header, "sm_70")
    assert "clock_mhz" not in failed.data() and failed.data()["machine"] == "sm_70"
    line = KernelLine.of_row(lowered, None)
    assert line.cycles is None and line.instructions is None and line.error == "deadlock"


# ---- the command line -----------------------------------------------------------------------------

def test_estimate_on_an_application_prints_every_kernel_and_the_totals():
    r = invoke("estimate", "--trace", TORCH, "--jobs", 1)
    assert r.exit_code == 0, r.output
    assert "kernels in launch order on one stream: their times add" in r.output
    table = r.output.split("\n\n", 1)[1].splitlines()
    ids = [line.split()[0] for line in table[2:]]
    assert sorted(ids[:-1], key=int) == ["1", "4", "5", "6", "8", "87"] and ids[-1] == "total"
    # the cycles column: the number with thousands separators before the time and IPC columns
    cycles = [int(re.search(r"\s([\d,]+)\s+[\d.]+\s+[\d.]+\s", line).group(1).replace(",", ""))
              for line in table[2:-1]]
    assert cycles == sorted(cycles, reverse=True)      # by time
    assert "6 kernel(s)" in table[-1] and "100.0%" in table[-1]


def test_application_cycles_equal_the_single_kernel_estimates():
    doc = json.loads(invoke("estimate", "--trace", TORCH, "--jobs", 1, "--json").output)
    single = {k: json.loads(invoke("estimate", "--trace", TORCH, "--kernel", k, "--json").output)["cycles"]
              for k in IDS}
    assert {k["id"]: k["cycles"] for k in doc["kernels"]} == single
    assert doc["totals"]["cycles"] == sum(single.values())
    assert sum(k["share"] for k in doc["kernels"]) == pytest.approx(1.0)
    for k in doc["kernels"]:
        assert k["top_stall"] != "issue" and k["top_stall_cycles"] == max(
            v for c, v in k["stalls"].items() if c != "issue")


def test_one_selected_kernel_gets_the_single_kernel_report():
    r = invoke("estimate", "--trace", TORCH, "--kernel", "re:FillFunctor")
    assert r.exit_code == 0 and r.output.startswith("kernel      _ZN2at6native29vectorized_elementwise_kernel")
    assert "cycle breakdown" in r.output


def test_missing_kernels_are_named_and_the_exit_status_is_1(partial):
    r = invoke("estimate", "--trace", partial, "--jobs", 1)
    assert r.exit_code == 1
    assert "missing     2 kernel(s) listed but their files are absent: kernel-2.traceg (line 2), kernel-3.traceg " \
           "(line 4); not estimated" in r.output
    assert "total  2 kernel(s)" in r.output
    assert r.stderr.strip().splitlines() == ["teg: error: not everything was estimated (kernels listed but missing, "
                                             "or kernels or points that failed: the report names them)"]
    doc = json.loads(invoke("estimate", "--trace", partial, "--jobs", 1, "--json").stdout)
    assert [(m["id"], m["line"]) for m in doc["missing"]] == [(2, 2), (3, 4)]
    lines = invoke("estimate", "--trace", partial, "--jobs", 1, "--csv").stdout.splitlines()
    assert lines[0].startswith("position,id,name,grid,block")
    assert [ln.split(",")[:2] for ln in lines[1:]] == [["0", "1"], ["1", "2"], ["2", "4"], ["3", "3"]]
    assert "missing:" in lines[2] and lines[1].endswith(",")


def test_failed_kernels_are_listed_and_the_others_still_run(partial):
    """gt200 (the TEG report's GTX 280) knows none of these Volta opcodes: every kernel fails."""
    r = invoke("estimate", "--trace", partial, "--jobs", 1, "--machine", "gt200")
    assert r.exit_code == 1
    assert r.output.count("failed      kernel") == 2 and "machine table gt200 does not know" in r.output


def test_unknown_opcodes_timed_as_alu_warn_per_kernel_and_exit_1(partial):
    r = CliRunner().invoke(main, ["estimate", "--trace", str(partial), "--jobs", "1", "--machine", "gt200",
                                  "--unknown", "alu"])
    assert r.exit_code == 1
    assert "teg: warning: kernel 1: timing unknown opcodes as integer ALU" in r.stderr
    assert "teg: warning: kernel 4: timing unknown opcodes as integer ALU" in r.stderr
    assert "total  2 kernel(s)" in r.stdout


def test_whatif_on_an_application_sums_the_kernels_savings():
    doc = json.loads(invoke("whatif", "--trace", TORCH, "--kernel", "re:reduce", "--jobs", 1, "--json").output)
    assert [k["id"] for k in doc["kernels"]] == [5, 87]
    single = {k: {r["mechanism"]: r["saved"] for r in json.loads(
        invoke("whatif", "--trace", TORCH, "--kernel", k, "--json").output)} for k in (5, 87)}
    for m in doc["mechanisms"]:
        assert m["saved_cycles"] == single[5][m["mechanism"]] + single[87][m["mechanism"]]
    text = invoke("whatif", "--trace", TORCH, "--kernel", "re:reduce", "--jobs", 1).output
    assert "kernels that gain most" in text and "baseline    2 kernel(s)" in text


def test_trace_info_on_an_application_prints_one_line_per_kernel(partial):
    r = invoke("trace", "info", TORCH)
    assert r.exit_code == 0
    rows = r.output.split("\n\n", 1)[1].splitlines()[2:]
    assert [ln.split()[0] for ln in rows] == [str(i) for i in IDS]
    r = invoke("trace", "info", partial)
    assert r.exit_code == 1 and "missing: 2 kernel(s) listed but their files are absent" in r.output
    doc = json.loads(invoke("trace", "info", partial, "--json").output)
    assert [k["id"] for k in doc["kernels"]] == [1, 4] and [m["id"] for m in doc["missing"]] == [2, 3]
    full = invoke("trace", "info", TORCH, "--full").output
    assert full.count("\nkernel ") == 6


def test_options_for_one_kernel_are_refused_on_an_application():
    """An option the application report does not use (here a stand-in for a single-kernel view) is
    an error when the trace has several kernels, and reaches the command when it has one."""
    from teg.cli.target import resolve_target

    seen = []

    @click.command()
    @click.option("--trace", "trace_path")
    @click.option("--kernel", default=None)
    @click.option("--timeline", is_flag=True)
    def cmd(trace_path, kernel, timeline):
        target = resolve_target(None, trace_path, kernel)
        if not target.is_application:
            seen.append((target.kernel, timeline))

    r = CliRunner().invoke(cmd, ["--trace", str(TORCH), "--timeline"])
    assert r.exit_code == 2 and "--timeline applies to one kernel" in r.output
    r = CliRunner().invoke(cmd, ["--trace", str(TORCH), "--kernel", "87", "--timeline"])
    assert r.exit_code == 0 and seen == [(None, True)]


def test_executor_options_are_checked():
    r = invoke("estimate", "--trace", TORCH, "--scheduler", "tcp://localhost:1")
    assert r.exit_code == 2 and "--scheduler names a Dask scheduler: use it with --executor dask" in r.output
    r = invoke("estimate", "--trace", TORCH, "--jobs", 0)
    assert r.exit_code == 2 and "--jobs 0: must be at least 1" in r.output


def test_a_native_multi_kernel_trace_is_an_application_too(tmp_path):
    """The same six kernels converted to teg's native format give the same per-kernel cycles."""
    import teg.trace as tt

    native = tt.convert(TORCH, tmp_path / "torch.npz")
    text = json.loads(invoke("estimate", "--trace", TORCH, "--jobs", 1, "--json").output)
    nat = json.loads(invoke("estimate", "--trace", native, "--jobs", 1, "--json").output)
    assert [(k["id"], k["cycles"]) for k in nat["kernels"]] == [(k["id"], k["cycles"]) for k in text["kernels"]]
    assert nat["source"] == str(native) and nat["missing"] == []
