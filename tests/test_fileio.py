"""teg.fileio: outputs written under a temporary name and renamed, never replacing a file teg did
not write, and the temporaries of killed runs removed by the next run (owner PID gone)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from teg import fileio
from teg.fileio import OutputError


def dead_pid() -> int:
    """The PID of a process that has exited (and been reaped)."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_atomic_file_replaces_only_when_complete(tmp_path):
    out = tmp_path / "a.json"
    fileio.write_text(out, '{"schema": "teg.x/1"}\n')
    owned = fileio.json_schema_owned("teg.")
    with pytest.raises(RuntimeError):
        with fileio.atomic_file(out, owned) as fh:
            fh.write(b'{"schema": "teg.x/1", "half')
            raise RuntimeError("killed by the test")
    assert out.read_text() == '{"schema": "teg.x/1"}\n'            # the old content, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]  # no temporary left
    fileio.write_text(out, '{"schema": "teg.x/1", "n": 2}\n', owned)
    assert json.loads(out.read_text())["n"] == 2


def test_a_file_teg_did_not_write_is_kept_unless_forced(tmp_path):
    user = tmp_path / "notes.json"
    user.write_text('{"mine": true}')
    owned = fileio.json_schema_owned("teg.validate.")
    with pytest.raises(OutputError, match=r"notes\.json: exists and was not written by teg; not overwriting it "
                                          r"\(--force overwrites it\)"):
        fileio.write_text(user, "{}", owned)
    assert user.read_text() == '{"mine": true}'
    fileio.write_text(user, '{"schema": "teg.validate.x"}', owned, force=True)
    assert "teg.validate" in user.read_text()


def test_a_folder_teg_did_not_write_is_never_replaced(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("x")
    for force in (False, True):
        with pytest.raises(OutputError, match="is a folder that teg did not write"):
            with fileio.atomic_folder(home, kind="k", force=force) as tmp:
                (tmp / "f").write_text("new")
    assert [p.name for p in home.iterdir()] == ["thesis.tex"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home"]


def test_marked_folder_is_replaced_whole(tmp_path):
    out = tmp_path / "acc"
    with fileio.atomic_folder(out, kind="k") as tmp:
        (tmp / "one").write_text("1")
    with fileio.atomic_folder(out, kind="k") as tmp:
        (tmp / "two").write_text("2")
    assert sorted(p.name for p in out.iterdir()) == [fileio.MARKER, "two"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["acc"]
    assert fileio.folder_marked(out, "k") and fileio.folder_marked(out) and not fileio.folder_marked(out, "other")
    (out / fileio.MARKER).write_text('{"written_by": "someone else"}')
    with pytest.raises(OutputError, match="is a folder that teg did not write"):
        with fileio.atomic_folder(out, kind="k"):
            pass


def test_parent_that_is_a_file_is_one_clear_error(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputError, match=r"f/out\.json: cannot write here: .*f is not a folder"):
        fileio.write_text(tmp_path / "f" / "out.json", "{}")


def test_devices_are_written_in_place(tmp_path):
    fileio.write_text("/dev/null", "discarded")             # never renamed over the device
    assert Path("/dev/null").exists() and not Path("/dev/null").is_file()
    with pytest.raises(OutputError, match="is not a folder"):
        with fileio.atomic_folder("/dev/null"):
            pass


def test_full_disk_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    out = tmp_path / "t.yaml"
    out.write_text("old")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fileio.os, "fsync", full)
    with pytest.raises(OutputError) as info:
        fileio.write_text(out, "new", force=True)
    assert str(info.value) == f"{out}: cannot write: No space left on device (nothing written; partial output removed)"
    assert out.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["t.yaml"]


def test_temporary_names_are_recognised():
    assert fileio.leftover_of(".out.npz.partial-123-0a1b2c3d") == ("out.npz", "partial", 123)
    assert fileio.leftover_of(".out.npz.partial-123-0a1b2c3d.npz") == ("out.npz", "partial", 123)
    assert fileio.leftover_of(".mm.old-77-ff00ff00") == ("mm", "old", 77)
    assert fileio.leftover_of(".mm.partial-k3j_x9q2") == ("mm", "partial", None)   # older teg: no PID
    assert fileio.leftover_of(".mm.old-4242") == ("mm", "old", 4242)               # older teg's .old-PID
    assert fileio.leftover_of("mm.partial-1-aa") is None and fileio.leftover_of(".bashrc") is None


def test_sweep_removes_only_what_a_gone_process_left(tmp_path):
    gone, me = dead_pid(), os.getpid()
    stale = tmp_path / f".out.partial-{gone}-aaaaaaaa"
    (stale / "k0000").mkdir(parents=True)
    (stale / "k0000" / "pc.npy").write_bytes(b"\0" * 100)
    live = tmp_path / f".out.partial-{me}-bbbbbbbb"
    live.mkdir()
    other = tmp_path / f".else.partial-{gone}-cccccccc"
    other.write_bytes(b"x")
    legacy_new = tmp_path / ".out.partial-abcd1234"
    legacy_new.mkdir()
    legacy_old = tmp_path / ".out.partial-wxyz5678"
    legacy_old.mkdir()
    past = time.time() - fileio.LEGACY_AGE_S - 60
    os.utime(legacy_old, (past, past))
    assert sorted(p.name for p in fileio.sweep(tmp_path, "out")) == sorted([stale.name, legacy_old.name])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name, legacy_new.name])
    assert [p.name for p in fileio.sweep(tmp_path)] == [other.name]


def test_a_reused_pid_does_not_keep_a_temporary_alive(tmp_path):
    """An entry last changed before the process now holding its PID started is stale."""
    entry = tmp_path / f".out.partial-{os.getppid()}-dddddddd"
    entry.mkdir()
    started = fileio.process_start(os.getppid())
    if started is None:
        pytest.skip("no /proc: process start times unknown")
    past = started - 3600
    os.utime(entry, (past, past))
    assert fileio.is_stale(entry, os.getppid())
    now = time.time()
    os.utime(entry, (now, now))
    assert not fileio.is_stale(entry, os.getppid())


def test_killed_between_the_two_renames_puts_the_old_folder_back(tmp_path):
    out = tmp_path / "trace"
    out.mkdir()
    (out / "meta.json").write_text("old")
    aside = tmp_path / f".trace.old-{dead_pid()}-eeeeeeee"
    os.replace(out, aside)                                   # state after a kill between the renames
    fileio.sweep(tmp_path, "trace")
    assert (out / "meta.json").read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["trace"]
