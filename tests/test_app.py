"""``teg trace app``: whole CUDA programs of the project's own (tests/fixtures/apps/*.cu), built with
``nvcc -cudart shared`` for sm_75 and sm_90 once per session, run without a GPU.

Checked: printed results against CPU references computed here; every launch's trace against
``teg.emu.emulate`` (what ``teg trace run`` does) of the same launch with the same inputs, global
addresses compared relative to the buffer they fall in (the program's buffers live at its own
addresses, ``emulate``'s at teg's fixed heap); launch selection; faults, a call teg lacks, refused
programs (static runtime, not CUDA, driver API, cuBLAS); ``--max-instructions``; event times with
``--estimate``; the runtime library's exports and the device-property layout against CUDA 13's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "apps"
ARCHS = ("sm_75", "sm_90")
N = 1000
THREADS = 128

def _have(tool: str) -> bool:
    from teg.sass.binaries import find_tool
    from teg.sass.errors import ToolNotFoundError

    try:
        find_tool(tool)
    except ToolNotFoundError:
        return False
    return True


pytestmark = [pytest.mark.nvcc,
              pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed"),
              pytest.mark.skipif(not _have("cuobjdump"), reason="cuobjdump not installed"),
              pytest.mark.skipif(shutil.which(os.environ.get("CC", "cc")) is None and shutil.which("gcc") is None,
                                 reason="no C compiler")]


def _nvcc(out: Path, source: Path, *flags: str) -> Path:
    proc = subprocess.run(["nvcc", *flags, "-o", str(out), str(source)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The fixture programs, compiled once: pipeline for both architectures, the others for sm_75;
    fault.cu also as one fatbinary of compressed sm_75 + sm_90 cubins."""
    d = tmp_path_factory.mktemp("apps")
    out = {f"pipeline_{a}": _nvcc(d / f"pipeline_{a}", FIXTURES / "pipeline.cu", "-cudart", "shared", f"-arch={a}")
           for a in ARCHS}
    out["fault"] = _nvcc(d / "fault", FIXTURES / "fault.cu", "-cudart", "shared", "-arch=sm_75")
    out["fault_multi"] = _nvcc(d / "fault_multi", FIXTURES / "fault.cu", "-cudart", "shared", "-compress-mode=size",
                               "-gencode", "arch=compute_75,code=sm_75", "-gencode", "arch=compute_90,code=sm_90")
    out["missing"] = _nvcc(d / "missing", FIXTURES / "missing_call.cu", "-cudart", "shared", "-arch=sm_75")
    out["static"] = _nvcc(d / "static", FIXTURES / "missing_call.cu", "-arch=sm_75")
    return out


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("TEG_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "teg-cache"))


def run_app(argv, out, capfd, **kw) -> tuple[int, str, str]:
    """``teg trace app`` in this process; the program's output is read at the file descriptors."""
    from teg.app.session import Session

    status = Session([str(a) for a in argv], out, **kw).run()
    got = capfd.readouterr()
    return status, got.out, got.err


def run_cli(args, env_extra=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parent.parent), **(env_extra or {}))
    return subprocess.run([sys.executable, "-c", "from teg.cli import main; main()", "trace", "app", *map(str, args)],
                          capture_output=True, text=True, timeout=600, env=env)


# ---- CPU references -------------------------------------------------------------------------------

WEIGHTS = np.array([1.0, -2.0, 0.5, 3.0, -1.5, 2.5, 0.25, -0.75], np.float32)


def reference(n: int = N):
    """What pipeline.cu computes, step by step, with C's float/double semantics."""
    i = np.arange(n)
    x0 = ((i % 17).astype(np.float32) * np.float32(0.25) - np.float32(1.0)).astype(np.float32)
    x1 = ((x0 * np.float32(1.5)).astype(np.float64) + 0.25).astype(np.float32)
    y = (x1 * WEIGHTS[i % 8]).astype(np.float32)
    blocks = (n + THREADS - 1) // THREADS
    sums = []
    for b in range(blocks):
        part = np.zeros(THREADS, np.float32)
        seg = y[b * THREADS:(b + 1) * THREADS]
        part[:len(seg)] = seg
        s = THREADS // 2
        while s:
            part[:s] = part[:s] + part[s:2 * s]
            s //= 2
        sums.append(part[0])
    d0 = 0.5 * (i % 5)
    d1 = 2.0 * d0 + y[i % THREADS].astype(np.float64)
    return {"x0": x0, "x1": x1, "y": y, "sums": sums, "positives": int((y > 0).sum()), "d0": d0, "d1": d1}


def expected_lines(n: int = N) -> list[str]:
    r = reference(n)
    lines = [f"sum {b} {s:.6e}" for b, s in enumerate(r["sums"])]
    lines += [f"positives {r['positives']}", f"dsum {r['d1'].sum():.10e}", f"d7 {r['d1'][7]:.17g}"]
    lines.append("globals 20.0 31.0 42.0 61.0 managed 69")
    # table_ptr[t % 3] · t halved and table_ptr[t % 3] · (t + 1) quadrupled, t = 3 and 31 (FMUL.D2, FMUL.M4)
    lines.append(f"scaled {0.5 * 20 * 3:.2f} {0.5 * 30 * 31:.2f} {20 * 4 * 4.0:.2f} {30 * 32 * 4.0:.2f}")
    return lines


# ---- results and traces ---------------------------------------------------------------------------

@pytest.mark.parametrize("arch", ARCHS)
def test_results_equal_cpu_reference(built, arch, tmp_path, capfd):
    status, out, err = run_app([built[f"pipeline_{arch}"], N], tmp_path / "t", capfd)
    assert status == 0, err
    lines = out.splitlines()
    for want in expected_lines():
        assert want in lines, (want, out)
    assert "elapsed_ms 0.000000" in lines                     # without --estimate events measure 0
    major, minor = arch[3], arch[4]
    assert f"device {major}.{minor} " in out
    meta = json.loads((tmp_path / "t" / "meta.json").read_text())
    app = meta["application"]
    assert app["exit_status"] == 0 and app["launches"] == 6 and app["traced"] == 6
    assert app["machine"] == arch and app["sass"] == "program.sass"
    assert [k["info"]["kernel_id"] for k in meta["kernels"]] == [1, 2, 3, 4, 5, 6]
    assert [k["info"]["binary_version"] for k in meta["kernels"]] == [int(arch[3:])] * 6
    # the two host-to-device copies of x and d and the two cudaMemcpyToSymbol are listed
    sizes = sorted(b for _, b in meta["memcpy"])
    assert sizes == sorted([N * 4, N * 8, 32, 4])
    assert "6 launches (6 traced)" in err


def _cubin_of(program: Path, arch: str, tmp: Path) -> Path:
    from teg.sass.binaries import find_tool

    subprocess.run([str(find_tool("cuobjdump")), "-xelf", "all", str(program)], cwd=tmp, check=True,
                   capture_output=True, timeout=300)
    from teg.emu.cubin import read_cubin

    return next(c for c in sorted(tmp.glob(f"*{arch}*.cubin")) if read_cubin(c))     # not the empty link module


def _buffer_view(kt, buffers: list[tuple[int, int]]):
    """Each address as (buffer index, offset) when it falls in one of ``buffers`` ((base, bytes)),
    else (-1, address): shared and local offsets stay as they are."""
    a = np.asarray(kt.addresses).astype(np.uint64)
    which = np.full(len(a), -1, np.int64)
    off = a.astype(np.int64, copy=True)
    for j, (base, n) in enumerate(buffers):
        inside = (a >= np.uint64(base)) & (a < np.uint64(base + n))
        which[inside] = j
        off[inside] = (a[inside] - np.uint64(base)).astype(np.int64)
    return which, off


def assert_same_trace(app_kt, emu_kt, app_buffers, emu_buffers):
    for col in ("warp", "block", "pc", "mask", "dst", "src", "mem_width", "imm", "addr_start", "warp_start",
                "warp_block", "block_xyz"):
        assert np.array_equal(np.asarray(getattr(app_kt, col)), np.asarray(getattr(emu_kt, col))), col
    assert [app_kt.opcodes[i] for i in app_kt.opcode] == [emu_kt.opcodes[i] for i in emu_kt.opcode]
    wa, oa = _buffer_view(app_kt, app_buffers)
    we, oe = _buffer_view(emu_kt, emu_buffers)
    assert np.array_equal(wa, we) and np.array_equal(oa, oe)
    assert (wa >= 0).any()                                   # the comparison covered global accesses
    for f in ("grid", "block", "shmem", "nregs", "binary_version"):
        assert getattr(app_kt.info, f) == getattr(emu_kt.info, f), f


@pytest.mark.parametrize("arch", ARCHS)
def test_each_launch_trace_equals_single_launch_emulation(built, arch, tmp_path, capfd):
    """Launches 1, 2, 3, 5 of pipeline.cu against ``teg.emu.emulate`` with the inputs they had
    (the CPU reference of the earlier steps; launch 2 reads ``__constant__`` weights, which only
    change its data: ``emulate`` runs it with the cubin's zeros). Launch 4 and 6 use __device__
    variables, which a single-launch emulation cannot hold; their results are checked above."""
    import teg.trace as tt
    from teg.emu import emulate, load_kernel

    prog = built[f"pipeline_{arch}"]
    status, _, err = run_app([prog, N], tmp_path / "t", capfd)
    assert status == 0, err
    trace = tt.load(tmp_path / "t")
    meta = json.loads((tmp_path / "t" / "meta.json").read_text())["application"]["traced_launches"]
    (tmp_path / "x").mkdir()
    cubin = _cubin_of(prog, arch, tmp_path / "x")
    r = reference()
    blocks = (N + THREADS - 1) // THREADS
    affine = np.array((1.5, N, 0.25), dtype=[("scale", "<f4"), ("n", "<i4"), ("shift", "<f8")])[()]
    launches = {
        1: ("affine", [r["x0"], affine], 0),
        2: ("weigh", [r["x1"], np.zeros(N, np.float32), np.int32(N)], 0),
        3: ("block_sums", [r["y"], np.zeros(blocks, np.float32), np.int32(N)], THREADS * 4),
        5: ("daxpy", [r["d0"], r["y"], np.float64(2.0), np.int32(N), np.int32(THREADS)], 0),
    }
    for lid, (name, args, shmem) in launches.items():
        p, image = load_kernel(cubin, name)
        emu = emulate(p, image, (blocks, 1, 1), (THREADS, 1, 1), args, shmem=shmem)
        app_kt = trace.kernels[lid - 1]
        assert app_kt.info.kernel_id == lid and app_kt.info.name == p.name
        params = bytes.fromhex(meta[lid - 1]["params"])
        pointers = [int.from_bytes(params[q.offset:q.offset + 8], "little")
                    for q, a in zip(image.params, args) if isinstance(a, np.ndarray)]
        app_buffers = [(base, n) for base, (_, n) in zip(pointers, emu.trace.memcpy)]
        assert_same_trace(app_kt, emu.kernel_trace, app_buffers, list(emu.trace.memcpy))
    # affine's output in the emulation is launch 2's input in the program
    assert np.array_equal(emulate(*load_kernel(cubin, "affine"), (blocks, 1, 1), (THREADS, 1, 1),
                                  [r["x0"], affine]).outputs["arg0"], r["x1"])


def test_launch_hook_takes_rows_and_sees_every_launch(built, tmp_path, capfd):
    """A hook that takes launches 1 and 3 (``TraceCollector``) gets exactly the traces a plain run
    writes for them, sees every launch (parameters, allocations, the memory as the launch finds it)
    and its warp instructions; the launches it took are not written to the output folder."""
    import teg.trace as tt
    from teg.app.session import LaunchHook
    from teg.emu.launch import TraceCollector

    prog = built["pipeline_sm_75"]
    status, _, err = run_app([prog, N], tmp_path / "plain", capfd)
    assert status == 0, err
    plain = tt.load(tmp_path / "plain")
    meta = json.loads((tmp_path / "plain" / "meta.json").read_text())["application"]["traced_launches"]

    class Take(LaunchHook):
        def __init__(self):
            self.seen, self.done, self.sinks, self.first_input = [], [], {}, None

        def before(self, launch):
            self.seen.append(launch)
            if launch.id == 2:        # launch 2 reads launch 1's output: its input bytes, as it finds them
                addr = int.from_bytes(launch.params[:8], "little")
                self.first_input = launch.memory[addr - launch.base:addr - launch.base + 4 * N].view(np.float32).copy()
            if launch.id in (1, 3):
                self.sinks[launch.id] = TraceCollector()
                return self.sinks[launch.id]
            return None

        def after(self, launch, rows, fault):
            self.done.append((launch.id, rows, fault))

    hook = Take()
    status, out, err = run_app([prog, N], tmp_path / "hooked", capfd, hook=hook)
    assert status == 0, err
    assert all(line in out.splitlines() for line in expected_lines())
    assert [v.id for v in hook.seen] == [1, 2, 3, 4, 5, 6]
    assert hook.done == [(m["id"], m["warp_instructions"], None) for m in meta]
    rel = lambda allocs: [(a - allocs[0][0], n) for a, n in allocs]      # the heap's base differs per run
    for v, m in zip(hook.seen, meta):
        assert v.kernel == m["kernel"] and list(v.grid) == m["grid"] and len(v.params.hex()) == len(m["params"])
        assert rel(v.allocations) == rel(m["allocations"]) and v.program.name == v.kernel
        assert v.allocations[0][0] >= v.base and v.memory.shape[0] >= sum(n for _, n in v.allocations)
    assert np.array_equal(hook.first_input, reference()["x1"])
    written = json.loads((tmp_path / "hooked" / "meta.json").read_text())
    assert [k["info"]["kernel_id"] for k in written["kernels"]] == [2, 4, 5, 6]
    for lid, sink in hook.sinks.items():
        kt = sink.kernel_trace()
        assert_same_trace(kt, plain.kernels[lid - 1], hook.seen[lid - 1].allocations,
                          [tuple(a) for a in meta[lid - 1]["allocations"]])


def test_estimate_reads_the_folder_with_its_sass(built, tmp_path, capfd):
    from click.testing import CliRunner

    from teg.cli import main

    status, _, _ = run_app([built["pipeline_sm_75"], N], tmp_path / "t", capfd)
    assert status == 0
    res = CliRunner().invoke(main, ["estimate", "--trace", str(tmp_path / "t"), "--jobs", "1", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    rows = doc["kernels"] if "kernels" in doc else doc["rows"]
    assert [r["id"] for r in rows] == [1, 2, 3, 4, 5, 6] and all(r["error"] is None for r in rows)
    one = CliRunner().invoke(main, ["estimate", "--trace", str(tmp_path / "t"), "--kernel", "3"])
    assert one.exit_code == 0 and "controlcodes dependencies" in one.output     # program.sass was used


def test_estimate_option_times_events_with_teg_estimates(built, tmp_path, capfd):
    """With --estimate, cudaEventElapsedTime returns the summed estimates of launches 1-4 (between
    the events; copies take no time)."""
    from teg.analysis.application import estimate_application
    from teg.trace.application import open_application, select
    from teg.analysis.executors import Executor

    status, out, err = run_app([built["pipeline_sm_75"], N], tmp_path / "t", capfd, estimate=True)
    assert status == 0, err
    ms = float(re.search(r"elapsed_ms (\S+)", out).group(1))
    app = select(open_application(tmp_path / "t"), "1-4")
    rep = estimate_application(app, machine="sm_75", sass=app.sass, executor=Executor(jobs=1))
    assert rep.complete
    assert ms == pytest.approx(sum(r.time_us for r in rep.rows) / 1000, abs=2e-6)
    assert ms > 0


def test_launch_selection_traces_some_and_runs_all(built, tmp_path, capfd):
    prog = built["pipeline_sm_75"]
    status, out, _ = run_app([prog, N], tmp_path / "a", capfd, launches="2-3,6")
    assert status == 0 and all(line in out.splitlines() for line in expected_lines())
    meta = json.loads((tmp_path / "a" / "meta.json").read_text())
    assert [k["info"]["kernel_id"] for k in meta["kernels"]] == [2, 3, 6]
    assert meta["application"]["launches"] == 6
    status, out, _ = run_app([prog, N], tmp_path / "b", capfd, launches="re:^_Z\\d+block")
    assert status == 0 and all(line in out.splitlines() for line in expected_lines())
    meta = json.loads((tmp_path / "b" / "meta.json").read_text())
    assert [k["info"]["kernel_id"] for k in meta["kernels"]] == [3]
    status, _, _ = run_app([prog, N], tmp_path / "c", capfd, launches="daxpy")
    assert [k["info"]["kernel_id"] for k in json.loads((tmp_path / "c" / "meta.json").read_text())["kernels"]] == [5]


def test_stop_after_keeps_the_first_launches(built, tmp_path, capfd):
    status, out, err = run_app([built["pipeline_sm_75"], N], tmp_path / "t", capfd, stop_after=2)
    assert status == 0 and "teg stopped the program after launch 2 (--stop-after)" in err
    assert "positives" not in out                           # the program ended inside launch 2
    meta = json.loads((tmp_path / "t" / "meta.json").read_text())
    assert [k["info"]["kernel_id"] for k in meta["kernels"]] == [1, 2]
    app = meta["application"]
    assert app["stopped_after"] == 2 and app["exit_status"] is None and app["launches"] == 2


# ---- faults, refusals, limits ---------------------------------------------------------------------

def test_fault_reaches_the_program_and_teg_names_it(built, tmp_path, capfd):
    status, out, err = run_app([built["fault"]], tmp_path / "t", capfd)
    assert status == 3                                         # the program's own status
    assert out.splitlines() == ["first cudaSuccess", "sync cudaErrorIllegalAddress", "copy cudaErrorIllegalAddress",
                                "last cudaErrorIllegalAddress"]
    line = next(s for s in err.splitlines() if "out-of-bounds" in s)
    assert "launch 2" in line and "_Z7scatterPii" in line and "thread (2,0,0) of block (0,0,0)" in line
    meta = json.loads((tmp_path / "t" / "meta.json").read_text())
    assert [k["info"]["kernel_id"] for k in meta["kernels"]] == [1]     # the faulting launch has no trace
    assert meta["application"]["exit_status"] == 3 and len(meta["application"]["faults"]) == 1


def test_compressed_multi_arch_fatbinary_and_machine_choice(built, tmp_path, capfd):
    status, _, _ = run_app([built["fault_multi"]], tmp_path / "a", capfd)
    assert status == 3
    meta = json.loads((tmp_path / "a" / "meta.json").read_text())
    assert meta["application"]["machine"] == "sm_90" and meta["kernels"][0]["info"]["binary_version"] == 90
    status, _, _ = run_app([built["fault_multi"]], tmp_path / "b", capfd, machine="sm_75")
    meta = json.loads((tmp_path / "b" / "meta.json").read_text())
    assert meta["application"]["machine"] == "sm_75" and meta["kernels"][0]["info"]["binary_version"] == 75
    status, _, err = run_app([built["fault_multi"]], tmp_path / "c", capfd, machine="sm_80")
    assert status == 2 and "no SASS that sm_80 runs" in err and "teg has no PTX compiler" in err
    assert not (tmp_path / "c").exists()


def test_missing_call_stops_the_program_by_name(built, tmp_path):
    res = run_cli(["-o", tmp_path / "t", "--", built["missing"]])
    assert res.returncode == 2
    assert res.stdout == "before the graph\n"                  # flushed before the stop, nothing after
    errs = [s for s in res.stderr.splitlines() if s.startswith("teg: error:")]
    assert errs == [f"teg: error: missing called cudaGraphCreate, which teg's CUDA runtime does not implement"]
    assert not (tmp_path / "t").exists()


def _fake_library(tmp: Path, soname: str) -> Path:
    src = tmp / "fake.c"
    src.write_text("int fake_entry(void) { return 0; }\n")
    lib = tmp / soname
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), f"-Wl,-soname,{soname}", str(src)], check=True)
    return lib


@pytest.mark.parametrize("kind", ["static", "plain", "script", "driver", "cublas"])
def test_refused_programs_get_one_line_and_exit_2(built, kind, tmp_path):
    if kind == "static":
        prog, want = built["static"], "linked with the static CUDA runtime (nvcc's default): rebuild it with `nvcc -cudart shared`"
    elif kind == "script":
        prog = tmp_path / "run.sh"
        prog.write_text("#!/bin/sh\necho hi\n")
        prog.chmod(0o755)
        want = "not an ELF executable"
    else:
        src = tmp_path / "main.c"
        src.write_text("int fake_entry(void);\nint main(void) { return 0; }\n" if kind != "plain" else
                       "int main(void) { return 0; }\n")
        prog = tmp_path / "prog"
        libs = []
        if kind in ("driver", "cublas"):
            lib = _fake_library(tmp_path, "libcuda.so.1" if kind == "driver" else "libcublas.so.13")
            libs = [str(lib), "-Wl,--no-as-needed"]
        subprocess.run(["gcc", "-o", str(prog), str(src), "-Wl,--no-as-needed", *libs], check=True)
        want = {"plain": "not a CUDA program", "driver": "uses the CUDA driver API (cuModuleLoad, cuLaunchKernel",
                "cublas": "uses cuBLAS (libcublas.so.13), which teg does not emulate"}[kind]
    res = run_cli(["-o", tmp_path / "t", "--", prog])
    assert res.returncode == 2 and res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("teg: error: ") and want in lines[0], res.stderr
    assert not (tmp_path / "t").exists()


def test_max_instructions_stops_with_a_clear_message(built, tmp_path, capfd):
    status, _, err = run_app([built["pipeline_sm_75"], N], tmp_path / "t", capfd, max_instructions=1000)
    assert status == 2
    assert "launch 3 (_Z10block_sumsPKfPfi)" in err and "more than 1,000 warp instructions" in err
    assert not (tmp_path / "t").exists()


def test_program_killed_by_a_signal(tmp_path, capfd, built):
    """A host-side crash after the launches: teg reports the signal and exits 128 + its number,
    with the traces written (the kernels finished)."""
    src = tmp_path / "crash.cu"
    src.write_text("#include <signal.h>\n__global__ void k(int *x) { x[threadIdx.x] = 1; }\n"
                   "int main() { int *x; cudaMalloc(&x, 128); k<<<1, 32>>>(x); cudaDeviceSynchronize();"
                   " raise(SIGABRT); return 0; }\n")
    prog = _nvcc(tmp_path / "crash", src, "-cudart", "shared", "-arch=sm_75")
    status, _, err = run_app([prog], tmp_path / "t", capfd)
    assert status == 128 + 6 and "killed by signal 6 (SIGABRT)" in err
    assert json.loads((tmp_path / "t" / "meta.json").read_text())["application"]["exit_status"] == 134


# ---- the runtime library and its layouts ------------------------------------------------------------

def test_runtime_library_exports_every_cudart_function_with_its_version(tmp_path, monkeypatch):
    from teg.app.build import SONAME, export_names, library_dir

    lib = library_dir(quiet=True) / SONAME
    dyn = subprocess.run(["readelf", "--dyn-syms", "-W", str(lib)], capture_output=True, text=True, check=True).stdout
    defined = {m.group(1) for m in re.finditer(r"\s(\S+)@@libcudart\.so\.13$", dyn, re.M)}
    names = export_names()
    assert len(names) > 400 and set(names) <= defined
    assert defined - set(names) <= {"libcudart.so.13"}         # nothing else leaks out
    soname = subprocess.run(["readelf", "-d", str(lib)], capture_output=True, text=True, check=True).stdout
    assert f"[{SONAME}]" in soname
    top = _cuda_top()
    real = next((top / d / "libcudart.so.13" for d in ("lib64", "lib") if top and (top / d / "libcudart.so.13").is_file()),
                None)
    if real is not None:                                        # the list is the real library's
        rdyn = subprocess.run(["readelf", "--dyn-syms", "-W", str(real)], capture_output=True, text=True).stdout
        rnames = {m.group(1) for m in re.finditer(r"FUNC\s+GLOBAL\s+DEFAULT\s+\d+\s+(\S+)@@libcudart\.so\.13$",
                                                   rdyn, re.M)}
        assert rnames == set(names)


def _cuda_top() -> Path | None:
    """The CUDA toolkit nvcc runs from (its ``TOP`` in ``nvcc --dryrun``)."""
    proc = subprocess.run(["nvcc", "--dryrun", "-c", "-x", "cu", "/dev/null"], capture_output=True, text=True, timeout=60)
    m = re.search(r"^#\$ TOP=(.+)$", proc.stdout + proc.stderr, re.M)
    return Path(m.group(1).strip()).resolve() if m else None


def _cuda_include() -> Path | None:
    top = _cuda_top()
    return top / "include" if top and (top / "include" / "cuda_runtime_api.h").is_file() else None


def test_struct_layouts_match_cuda_13_headers(tmp_path):
    from teg.app.device import DeviceProp, FuncAttributes

    inc = _cuda_include()
    if inc is None:
        pytest.skip("CUDA headers not found")
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <cuda_runtime_api.h>", "int main(void) {"]
    for struct, cls in (("cudaDeviceProp", DeviceProp), ("cudaFuncAttributes", FuncAttributes)):
        lines.append(f'printf("{struct} size %zu\\n", sizeof(struct {struct}));')
        for name, _ in cls._fields_:
            lines.append(f'printf("{struct} {name} %zu\\n", offsetof(struct {struct}, {name}));')
    lines.append("return 0; }")
    (tmp_path / "o.c").write_text("\n".join(lines))
    subprocess.run(["gcc", f"-I{inc}", "-o", str(tmp_path / "o"), str(tmp_path / "o.c")], check=True)
    got = subprocess.run([str(tmp_path / "o")], capture_output=True, text=True, check=True).stdout.split("\n")
    import ctypes
    want = []
    for struct, cls in (("cudaDeviceProp", DeviceProp), ("cudaFuncAttributes", FuncAttributes)):
        want.append(f"{struct} size {ctypes.sizeof(cls)}")
        want += [f"{struct} {name} {getattr(cls, name).offset}" for name, _ in cls._fields_]
    assert got[:-1] == want


def test_device_addresses_are_the_same_run_after_run(built, tmp_path, capfd):
    """The program's device memory sits at the runtime's fixed address (0x2000_0000_0000), not where
    address-space randomisation puts an mmap: two runs of the same program allocate at the same
    device addresses, record the same traces and get the same estimates (cache sets, DRAM channels
    and TLB pages follow the addresses)."""
    import teg.trace as tt

    runs = []
    for name in ("a", "b"):
        status, _, err = run_app([built["pipeline_sm_75"], N], tmp_path / name, capfd)
        assert status == 0, err
        assert "not at its fixed address" not in err
        meta = json.loads((tmp_path / name / "meta.json").read_text())["application"]["traced_launches"]
        runs.append(meta)
    a, b = runs
    assert [m["allocations"] for m in a] == [m["allocations"] for m in b]
    assert min(addr for m in a for addr, _ in m["allocations"]) >= 0x2000_0000_0000
    ta, tb = tt.load(tmp_path / "a"), tt.load(tmp_path / "b")
    assert len(ta.kernels) == len(tb.kernels) == 6
    for ka, kb in zip(ta.kernels, tb.kernels):
        assert np.array_equal(np.asarray(ka.addresses), np.asarray(kb.addresses))
