"""The trace cache is a cache (issue 37, points 2, 6, 8, 9, 14 and the cache items of 15):
``--clear`` removes only teg's own entries; entries are keyed by content and reader version;
concurrent fillers, readers and ``--clear`` never make a run fail (real processes, paused at
chosen points so that each interleaving is deterministic, every wait bounded); a conversion in
progress is alive while its writer holds its lock, whatever its PID looks like from here; an
unusable cache location falls back to a temporary folder that is removed afterwards."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import teg.trace as tt
from procs import dead_pid, env_with, finish, paused_proc, release, teg_proc, wait_for
from teg.cli import main
from teg.trace import cache as trace_cache
from teg.trace import digest

DATA = Path(__file__).parent / "data" / "traces"
VECTORADD = DATA / "microgpusim" / "vectoradd-100-32-trace"
MATRIXMUL = DATA / "microgpusim" / "matrixmul-32-32-trace"
BUNDLED = Path(__file__).parents[1] / "traces" / "matmul_abt.sm_90.trace.npz"


def cli(*args, **env):
    return CliRunner(env={k: str(v) for k, v in env.items()}).invoke(main, [str(a) for a in args])


def teg_entries(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name != "digests")


# ---- point 2: --clear removes only teg's own entries ------------------------------------------------

def test_clear_leaves_the_users_files_in_a_shared_folder(tmp_path, monkeypatch):
    """TEG_CACHE_DIR=$HOME/data, then --clear: the user's files stay, teg's entries go."""
    data = tmp_path / "data"
    (data / "results").mkdir(parents=True)
    (data / "results" / "run1.csv").write_text("a,b\n1,2\n")
    (data / "notes.txt").write_text("mine\n")
    (data / "0123456789abcdef0123").mkdir()                   # looks like a layout-1 key, holds no teg trace
    (data / "0123456789abcdef0123" / "thesis.tex").write_text("x")
    monkeypatch.setenv("TEG_CACHE_DIR", str(data))
    assert cli("trace", "info", VECTORADD).exit_code == 0     # one entry of teg's
    listing = cli("trace", "cache").output
    assert listing.count("not teg's: --clear leaves it alone") == 3 and "1 kernel(s) from" in listing
    res = cli("trace", "cache", "--clear", "--json")
    assert res.exit_code == 0
    doc = json.loads(res.output)
    assert sorted(Path(e["path"]).name for e in doc["kept"]) == ["0123456789abcdef0123", "notes.txt", "results"]
    assert sorted(p.name for p in data.iterdir()) == ["0123456789abcdef0123", "notes.txt", "results"]
    assert (data / "results" / "run1.csv").read_text() == "a,b\n1,2\n"


# ---- point 6: concurrent fillers, readers and --clear ------------------------------------------------

def test_two_fillers_and_a_reader_never_fail(tmp_path):
    """A publishes its conversion after B published the same entry and while R reads B's entry
    (paused between two columns): nobody fails, and R's columns are B's whole entry."""
    cache, sig = tmp_path / "cache", tmp_path / "sig"
    sig.mkdir()
    env = env_with(TEG_CACHE_DIR=cache)
    a = paused_proc("teg.trace.native:TraceWriter.commit", 1, sig, "a", ["trace", "info", MATRIXMUL], env)
    wait_for(sig / "a.at", a)                                 # A converted, not yet published
    code, out_b, err_b = finish(teg_proc(["trace", "info", MATRIXMUL], env))
    assert code == 0, err_b                                   # B converted and published
    r = paused_proc("teg.trace.native:map_npy", 3, sig, "r", ["trace", "info", MATRIXMUL], env)
    wait_for(sig / "r.at", r)                                 # R has mapped two columns of B's entry
    release(sig, "a")
    code, out_a, err_a = finish(a)
    assert code == 0, err_a                                   # A kept B's entry and used it
    release(sig, "r")
    code, out_r, err_r = finish(r)
    assert code == 0, err_r
    assert out_a == out_b == out_r and out_b.strip()
    assert len(teg_entries(cache)) == 1                       # one entry, no temporaries


def test_a_filler_never_takes_a_published_entry_away(tmp_path):
    """Two fillers of an empty cache: the later one (A) must not move the earlier one's entry aside
    to put its own in place, leaving a moment with no entry — a reader mapping the entry then meets
    a missing column ("corrupted column"), and a third filler publishing into that moment makes A's
    rename fail ("Directory not empty"). A is paused right after any rename of a published entry
    (there is none to pause at when publishing is first-wins) and the reader resumes then."""
    from procs import paused_at

    cache, sig = tmp_path / "cache", tmp_path / "sig"
    sig.mkdir()
    env = env_with(TEG_CACHE_DIR=cache)
    entry = r"^(t-[0-9a-f]{32}|[0-9a-f]{20})$"
    a = paused_at([{"where": "teg.trace.native:TraceWriter.commit", "nth": 1, "tag": "a"},
                   {"where": "os:replace", "nth": 1, "tag": "gap", "when": "after", "arg0": entry}], sig,
                  ["trace", "info", MATRIXMUL], env)
    wait_for(sig / "a.at", a)                                 # A converted, not yet published
    assert finish(teg_proc(["trace", "info", MATRIXMUL], env))[0] == 0        # B published the entry
    r = paused_proc("teg.trace.native:map_npy", 3, sig, "r", ["trace", "info", MATRIXMUL], env)
    wait_for(sig / "r.at", r)                                 # R is reading B's entry
    release(sig, "a")
    t0 = time.monotonic()
    while not (sig / "gap.at").exists() and a.poll() is None and time.monotonic() - t0 < 120:
        time.sleep(0.02)                                      # A moved the entry away, or finished
    release(sig, "r")
    code_r, out_r, err_r = finish(r)
    release(sig, "gap")
    code_a, out_a, err_a = finish(a)
    assert (code_r, code_a) == (0, 0), (err_r, err_a)
    assert out_r == out_a and len(teg_entries(cache)) == 1


def test_concurrent_fillers_of_an_empty_cache(tmp_path):
    """Three processes converting the same input into an empty cache at once."""
    for rnd in range(1):
        cache = tmp_path / f"cache{rnd}"
        procs = [teg_proc(["trace", "info", MATRIXMUL], env_with(TEG_CACHE_DIR=cache)) for _ in range(3)]
        results = [finish(p) for p in procs]
        assert [c for c, _, _ in results] == [0, 0, 0], [e for _, _, e in results]
        assert len({o for _, o, _ in results}) == 1
        assert len(teg_entries(cache)) == 1


def test_clear_during_a_run_keeps_the_entry_being_read(tmp_path):
    cache, sig = tmp_path / "cache", tmp_path / "sig"
    sig.mkdir()
    env = env_with(TEG_CACHE_DIR=cache)
    assert finish(teg_proc(["trace", "info", MATRIXMUL], env))[0] == 0
    r = paused_proc("teg.trace.native:map_npy", 3, sig, "r", ["trace", "info", MATRIXMUL], env)
    wait_for(sig / "r.at", r)
    code, out, err = finish(teg_proc(["trace", "cache", "--clear"], env))
    assert code == 0 and "removed 1 entry" in out and "1 entry in use" in out, (out, err)    # (the memo went)
    release(sig, "r")
    code, out, err = finish(r)
    assert code == 0, err
    assert len(teg_entries(cache)) == 1
    assert "removed 1 entry" in finish(teg_proc(["trace", "cache", "--clear"], env))[1]
    assert list(cache.iterdir()) == []


FAKE_PID = r"""
import os, runpy, sys
pid = int(sys.argv.pop(1))
os.getpid = lambda: pid          # how this writer's PID looks from another PID namespace: not there
sys.argv[0] = "pauser"
exec(compile(sys.argv.pop(1), "pauser", "exec"))
"""


def test_a_conversion_in_another_pid_namespace_is_not_removed(tmp_path):
    """A writer whose PID this process cannot see (a container, a cluster node on a shared file
    system) holds its lock: another run's sweep of the cache leaves its conversion alone."""
    from procs import PAUSER

    cache, sig = tmp_path / "cache", tmp_path / "sig"
    sig.mkdir()
    env = env_with(TEG_CACHE_DIR=cache)
    w = subprocess.Popen([sys.executable, "-c", FAKE_PID, str(dead_pid()), PAUSER, "teg.trace.native:TraceWriter.commit",
                          "1", str(sig), "w", "trace", "info", str(MATRIXMUL)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    wait_for(sig / "w.at", w)
    (partial,) = [p for p in cache.iterdir() if ".partial-" in p.name]
    assert finish(teg_proc(["trace", "info", VECTORADD], env))[0] == 0        # sweeps the cache folder
    assert partial.is_dir()
    listing = finish(teg_proc(["trace", "cache"], env))[1]
    assert "conversion in progress" in listing
    release(sig, "w")
    code, out, err = finish(w)
    assert code == 0, err
    assert not partial.exists() and len(teg_entries(cache)) == 2


@pytest.mark.skipif(not shutil.which("unshare") or sys.platform != "linux", reason="needs unshare(1)")
def test_a_writer_in_a_real_pid_namespace_keeps_its_conversion(tmp_path):
    cache, sig = tmp_path / "cache", tmp_path / "sig"
    sig.mkdir()
    from procs import PAUSER

    probe = subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True)
    if probe.returncode:
        pytest.skip("unshare --pid not permitted here")
    # PIDs inside start at 1: spend some so the writer's PID is one no process has out here
    script = ('n=0; while [ $n -lt 300 ]; do /bin/true; n=$((n+1)); done; '
              f'{sys.executable} -c "$0" "$@"')
    w = subprocess.Popen(["unshare", "--pid", "--fork", "sh", "-c", script, PAUSER,
                          "teg.trace.native:TraceWriter.commit", "1", str(sig), "w", "trace", "info", str(MATRIXMUL)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_with(TEG_CACHE_DIR=cache))
    wait_for(sig / "w.at", w)
    (partial,) = [p for p in cache.iterdir() if ".partial-" in p.name]
    pid = int(partial.name.split(".partial-")[1].split("-")[0])
    assert finish(teg_proc(["trace", "info", VECTORADD], env_with(TEG_CACHE_DIR=cache)))[0] == 0
    assert partial.is_dir(), f"PID {pid} (visible here: {Path(f'/proc/{pid}').exists()})"
    release(sig, "w")
    assert finish(w)[0] == 0 and len(teg_entries(cache)) == 2


# ---- point 8 and 15: an unusable cache location ------------------------------------------------------

def _no_cache_env(tmp_path, **extra) -> dict:
    env = env_with(TMPDIR=tmp_path / "tmp", **extra)
    for k in ("TEG_CACHE_DIR", "XDG_CACHE_HOME"):
        env.pop(k, None)
    env.update({k: str(v) for k, v in extra.items()})
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return env


@pytest.mark.parametrize("where", ["home=/dev/null", "cache=/proc/1", "cache=a file"])
def test_an_unusable_cache_falls_back_to_a_temporary_folder_removed_afterwards(tmp_path, where):
    (tmp_path / "afile").write_text("x")
    extra = {"home=/dev/null": {"HOME": "/dev/null"}, "cache=/proc/1": {"TEG_CACHE_DIR": "/proc/1"},
             "cache=a file": {"TEG_CACHE_DIR": tmp_path / "afile"}}[where]
    env = _no_cache_env(tmp_path, **extra)
    for _ in range(2 if where == "home=/dev/null" else 1):
        code, out, err = finish(teg_proc(["trace", "info", MATRIXMUL], env))
        assert code == 0, err
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("teg: warning: trace cache ") and "cannot be used" in lines[0]
        assert "removed afterwards" in lines[0]
        assert list((tmp_path / "tmp").iterdir()) == []           # nothing leaked into the temp folder
    assert (tmp_path / "afile").read_text() == "x"


def test_compressed_npz_with_an_unusable_cache_leaves_nothing(tmp_path):
    z = tmp_path / "c.npz"
    tr = tt.load(BUNDLED)
    saved = tt.save(tr, tmp_path / "plain")
    import zipfile

    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(saved.rglob("*")):
            if f.is_file():
                zf.write(f, f.relative_to(saved).as_posix())
    env = _no_cache_env(tmp_path, HOME="/dev/null")
    code, out, err = finish(teg_proc(["trace", "info", z], env))
    assert code == 0, err
    assert list((tmp_path / "tmp").iterdir()) == []


def test_cache_location_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TEG_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")           # invalid per XDG: ignored
    assert trace_cache.cache_dir() == tmp_path / "home" / ".cache" / "teg" / "traces"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert trace_cache.cache_dir() == tmp_path / "xdg" / "teg" / "traces"
    monkeypatch.setenv("TEG_CACHE_DIR", "~/tegcache")                # a literal ~ (quoted in a config)
    assert trace_cache.cache_dir() == tmp_path / "home" / "tegcache"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TEG_CACHE_DIR", "rel")
    assert trace_cache.cache_dir() == tmp_path / "rel"


def test_progress_bar_never_writes_into_redirected_stderr(tmp_path, monkeypatch):
    pytest.importorskip("tqdm")
    import teg.cli.trace as cli_trace

    monkeypatch.setattr(cli_trace, "LARGE_INPUT_BYTES", 0)
    res = cli("trace", "convert", MATRIXMUL, tmp_path / "o", TEG_CACHE_DIR=tmp_path / "c")
    assert res.exit_code == 0 and "teg trace" not in res.stderr and "%" not in res.stderr
    res = cli("trace", "info", MATRIXMUL, TEG_CACHE_DIR=tmp_path / "c")
    assert res.exit_code == 0 and res.stderr == ""


# ---- point 9: keyed by content and reader version ---------------------------------------------------

def test_a_same_size_same_mtime_edit_is_converted_again(tmp_path, monkeypatch):
    monkeypatch.setenv("TEG_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "t"
    shutil.copytree(MATRIXMUL, src)
    kf = src / "kernel-1.traceg"
    first = tt.load(src)
    data = bytearray(kf.read_bytes())
    st = kf.stat()
    # an address in the middle of the file: same size, then the modification time put back (cp -p, rsync -t)
    mid = data.index(b"0x7f", len(data) // 2)
    old_addr = bytes(data[mid:mid + 14])
    data[mid + 13:mid + 14] = b"0" if data[mid + 13:mid + 14] != b"0" else b"4"
    kf.write_bytes(bytes(data))
    os.utime(kf, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert kf.stat().st_size == st.st_size and kf.stat().st_mtime_ns == st.st_mtime_ns
    second = tt.load(src)
    a, b = first.kernels[0].addresses, second.kernels[0].addresses
    assert a.shape == b.shape and np.any(a != b), old_addr     # (a compressed list's base: its 32 lanes move)
    assert len(teg_entries(tmp_path / "cache")) == 2


def test_the_key_holds_the_reader_version_and_the_content(tmp_path, monkeypatch):
    from teg.trace import accelsim

    files, _, listing = accelsim.accelsim_files(MATRIXMUL)
    k1 = trace_cache.entry_key(files, listing, None)
    monkeypatch.setattr(accelsim, "READER_VERSION", accelsim.READER_VERSION + 1)
    assert trace_cache.entry_key(files, listing, None) != k1
    monkeypatch.undo()
    from teg.trace import native                        # a new native format: entries converted again
    monkeypatch.setattr(native, "FORMAT_VERSION", native.FORMAT_VERSION + 1)
    assert trace_cache.entry_key(files, listing, None) != k1
    monkeypatch.undo()
    copy = tmp_path / "copy"
    shutil.copytree(MATRIXMUL, copy)                    # the same content elsewhere: the same entry
    f2, _, l2 = accelsim.accelsim_files(copy)
    assert trace_cache.entry_key(f2, l2, None) == k1


def test_digest_memo_is_trusted_only_for_a_file_not_changed_since(tmp_path, monkeypatch):
    f = tmp_path / "x.bin"
    f.write_bytes(b"a" * 1000)
    root = tmp_path / "memo"
    root.mkdir()
    d1 = digest.file_digest(f, root)
    assert not (root / digest.DIGESTS).exists()          # just written: racily clean, not memoized
    monkeypatch.setattr(digest.time, "time", lambda: f.stat().st_ctime + 10)
    digest._MEMO.clear()
    assert digest.file_digest(f, root) == d1 and len(list((root / digest.DIGESTS).iterdir())) == 2   # + marker
    digest._MEMO.clear()
    with open(f, "r+b") as fh:                            # same size, mtime put back: ctime still moves
        fh.write(b"b")
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert digest.file_digest(f, root) != d1


# ---- point 14: paths that are not UTF-8 ------------------------------------------------------------

@pytest.mark.skipif(sys.platform != "linux", reason="file names are bytes on Linux")
def test_paths_that_are_not_utf8(tmp_path, monkeypatch):
    import zipfile

    base = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    os.mkdir(base)

    def at(name: bytes) -> str:
        return os.fsdecode(os.path.join(base, name))          # the name as Python passes it on: surrogates

    shutil.copytree(MATRIXMUL, at(b"mm"))
    saved = tt.save(tt.load(BUNDLED), tmp_path / "plain")
    with zipfile.ZipFile(at(b"k.npz"), "w", zipfile.ZIP_DEFLATED) as zf:    # compressed: inflated into the cache
        for f in sorted(saved.rglob("*")):
            if f.is_file():
                zf.write(f, f.relative_to(saved).as_posix())
    monkeypatch.setenv("TEG_CACHE_DIR", at(b"cache\xff"))
    for args in (["trace", "info", at(b"mm")], ["trace", "info", at(b"k.npz")],
                 ["estimate", "--trace", at(b"k.npz"), "--sass", BUNDLED.parent / "matmul_abt.sm_90.sass"],
                 ["trace", "convert", at(b"mm"), at(b"out\xfe.npz")], ["trace", "cache"],
                 ["estimate", "--timeline", at(b"t\xfe.json")],
                 ["sweep", "--trace", at(b"mm"), "--warps", "1", "-o", at(b"r\xfe.csv"), "--jobs", "1"]):
        res = cli(*args)
        assert res.exit_code == 0 and res.exception is None, (args, res.output)
    assert os.path.isfile(os.path.join(base, b"out\xfe.npz")) and os.path.isfile(os.path.join(base, b"r\xfe.csv"))
    # and from a real command line of bytes
    code, out, err = finish(teg_proc(["trace", "info", os.path.join(base, b"mm")], env_with(TEG_CACHE_DIR=tmp_path / "c")))
    assert code == 0, err
