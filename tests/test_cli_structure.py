"""The shape of the command line (teg/cli): every module imports on its own, no two modules import
each other (directly or round a longer cycle, counting imports inside functions), every command
``teg`` lists resolves to a click command, a command imports only what it runs, and only teg's own
errors and operating-system errors are user errors — anything else is a bug with a traceback."""

from __future__ import annotations

import ast
import subprocess
import sys
import warnings
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import teg
from teg import TegError, UnknownOpcodeWarning, error_line
from teg.cli import COMMANDS, main
from teg.cli.errors import Incomplete, user_errors

CLI = Path(teg.__file__).parent / "cli"
ROOT = CLI.parent.parent
MODULES = sorted("teg.cli" if p.name == "__init__.py" else f"teg.cli.{p.stem}" for p in CLI.glob("*.py"))


def imports_of(path: Path, package: str) -> set[str]:
    """The teg.cli modules ``path`` imports anywhere in it (top level or inside functions);
    ``from teg.cli import X`` names the submodule X when there is one, else the package."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("teg.cli")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("teg.cli"):
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                out.add(sub if sub in MODULES else node.module)
    return out - {package}


def import_graph() -> dict[str, set[str]]:
    return {m: imports_of(CLI / ("__init__.py" if m == "teg.cli" else f"{m.split('.')[-1]}.py"), m) for m in MODULES}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle of ``graph`` found by depth-first search (each as the path round it)."""
    found, state = [], {}

    def visit(m, path):
        state[m] = "open"
        for n in sorted(graph.get(m, ())):
            if state.get(n) == "open":
                found.append(path[path.index(n):] + [n])
            elif n not in state:
                visit(n, path + [n])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_cli_module_imports_another_that_imports_it_back():
    graph = import_graph()
    assert set(graph) >= {"teg.cli", "teg.cli.estimate", "teg.cli.options", "teg.cli.errors", "teg.cli.target"}
    assert cycles(graph) == []
    assert graph["teg.cli"] == {"teg.cli.errors"}       # the group names its commands; it imports none


@pytest.mark.parametrize("module", MODULES)
def test_each_cli_module_imports_alone(module):
    r = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert r.returncode == 0, r.stderr


def test_every_listed_command_is_a_click_command():
    ctx = click.Context(main)
    assert set(main.list_commands(ctx)) == set(COMMANDS)
    for name in COMMANDS:
        assert isinstance(main.get_command(ctx, name), click.Command), name
    trace = main.get_command(ctx, "trace")
    assert set(trace.list_commands(ctx)) == {"info", "convert", "run", "app", "cache"}
    assert all(isinstance(trace.get_command(ctx, n), click.Command) for n in trace.list_commands(ctx))


def test_importing_the_cli_imports_no_command():
    code = ("import sys; from teg.cli import main; "
            "print(sorted(m for m in sys.modules if m.startswith('teg.') or m in ('numpy', 'numba')))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert eval(r.stdout) == ["teg.cli", "teg.cli.errors"]


def test_an_estimate_imports_no_plotting_dask_emulator_or_other_command():
    code = ("import sys\nfrom teg.cli import main\n"
            "try:\n    main(['estimate', '--sms', '1'], standalone_mode=False)\nexcept SystemExit:\n    pass\n"
            "print('MODULES', sorted(sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr
    mods = set(eval(r.stdout.split("MODULES", 1)[1]))
    assert "teg.engine.core" in mods and "teg.cli.estimate" in mods           # it did run the estimate
    unused = {"matplotlib", "dask", "distributed", "tqdm", "pyarrow", "multiprocessing", "teg.emu", "teg.app",
              "teg.validate", "teg.models", "teg.analysis.application", "teg.analysis.kernel_task", "teg.trace.application",
              "teg.analysis.sweepspec", "teg.cli.validate",
              "teg.cli.trace", "teg.cli.parse", "teg.cli.compare", "teg.cli.app_report", "teg.cli.app_sweep"}
    assert sorted(m for m in mods if m in unused or m.split(".")[0] in unused) == []


# ---- user errors --------------------------------------------------------------------------------

def _command(exc=None, warn=None, result=None):
    @click.command()
    @user_errors
    def cmd():
        if warn:
            warnings.warn(warn, UnknownOpcodeWarning)
        if exc is not None:
            raise exc
        return result
    return cmd


def test_teg_errors_and_os_errors_are_one_line_and_exit_2():
    r = CliRunner().invoke(_command(TegError("trace.traceg:12: no kernel here")))
    assert (r.exit_code, r.output) == (2, "teg: error: trace.traceg:12: no kernel here\n")
    r = CliRunner().invoke(_command(FileNotFoundError(2, "No such file or directory", "in/x.sass")))
    assert (r.exit_code, r.output) == (2, "teg: error: in/x.sass: No such file or directory\n")


@pytest.mark.parametrize("bug", [KeyError("slot"), IndexError("list index out of range"), LookupError("x")])
def test_a_programming_error_is_a_traceback_not_a_user_error(bug):
    r = CliRunner().invoke(_command(bug))
    assert r.exit_code == 1 and r.exception is bug and "teg: error" not in r.output


def test_an_incomplete_report_prints_its_warnings_then_its_line():
    r = CliRunner().invoke(_command(result=Incomplete("not everything was estimated")))
    assert (r.exit_code, r.output) == (1, "teg: error: not everything was estimated\n")
    r = CliRunner().invoke(_command(warn="kernel 3: FROB timed as ALU", result=Incomplete("x")))
    assert (r.exit_code, r.output) == (1, "teg: warning: kernel 3: FROB timed as ALU\n")   # unknown opcodes: 1


def test_error_line():
    assert error_line(TegError("a.yaml:3: memory.l1: expected a number")) == "a.yaml:3: memory.l1: expected a number"
    assert error_line(NotADirectoryError(20, "Not a directory", "out/x.npz")) == "out/x.npz: Not a directory"
    assert error_line(OSError("cannot map the trace")) == "cannot map the trace"
    assert error_line(KeyError("slot")) == "KeyError: 'slot'"
    assert error_line(ValueError()) == "ValueError"
    assert error_line(TegError("line one\nline\ttwo\x1b")) == "line one line\\ttwo\\x1b"


def test_a_kernel_selection_that_selects_nothing_is_a_user_error():
    from teg.trace import KernelNotFoundError

    assert issubclass(KernelNotFoundError, TegError) and issubclass(KernelNotFoundError, LookupError)
