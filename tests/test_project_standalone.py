"""The project stands alone (issue 25, item 5): tests read only files of the repository (or system
devices, the kernel's /proc interface, and paths that must not exist), and machine tables cite primary sources a user can follow,
never the development notes or folders outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# an absolute path in a string literal: allowed are devices, the kernel's /proc files (process
# states, limits) and deliberately missing paths
ABSOLUTE = re.compile(r"""["'](/(?!dev/|proc[/"']|nonexistent/)[A-Za-z][^"']*)["']""")
NOTES = re.compile(r"facts §|research file|research/accelsim|/work/|\.\./shared|shared/seeds|shared/measured"
                   r"|_facts\.md|accelsim_trace_format\.md|ARCHITECTURE_REVIEW|DESIGN\.md")
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".cu", ".cuh", ".c", ".h", ".sh", ".txt", ".toml"}


def test_tests_open_no_absolute_paths():
    found = [f"{f.name}:{n}: {m.group(1)}" for f in sorted((ROOT / "tests").glob("*.py"))
             for n, line in enumerate(f.read_text().splitlines(), 1) for m in ABSOLUTE.finditer(line)]
    assert found == []


def test_machine_tables_cite_no_development_notes():
    tables = sorted((ROOT / "isa_tables").rglob("*.yaml"))
    assert len(tables) > 20
    found = [f"{f.relative_to(ROOT)}:{n}: {line.strip()[:80]}" for f in tables
             for n, line in enumerate(f.read_text().splitlines(), 1) if NOTES.search(line)]
    assert found == []


def test_test_data_files_say_where_they_come_from():
    """Every data folder under tests/data has a provenance note (SOURCES.md or README.md)."""
    folders = [d for d in (ROOT / "tests" / "data").iterdir() if d.is_dir()]
    assert folders
    assert [d.name for d in folders if not ((d / "SOURCES.md").is_file() or (d / "README.md").is_file())] == []


def test_sources_and_documents_cite_no_development_notes():
    """Code, documents and benchmarks point to files of the repository or to primary sources (paper
    and table, public code at a path), never to the development notes outside it."""
    files = [ROOT / "README.md", ROOT / "pyproject.toml"]
    for top in ("teg", "docs", "benchmarks", "tests", "isa_tables", "traces", ".ci"):
        for f in sorted((ROOT / top).rglob("*")):
            rel = f.relative_to(ROOT)
            if (f.suffix in TEXT_SUFFIXES or top == ".ci") and f.is_file() and f != Path(__file__) \
                    and not any(part.startswith(".") or part == "__pycache__" for part in rel.parts[1:]) \
                    and rel.parts[:2] != ("tests", "data"):   # third-party traces, with their own notes
                files.append(f)
    assert len(files) > 100
    found = [f"{f.relative_to(ROOT)}:{n}: {line.strip()[:80]}" for f in files
             for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1) if NOTES.search(line)]
    assert found == []


def test_ci_runs_the_readme_test_command_verbatim():
    """`.ci/run` installs and tests exactly as the README's Quickstart tells a newcomer to."""
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if "pytest" in line]
    assert len(ci) == 1
    quickstart = (ROOT / "README.md").read_text().split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    assert ci[0].strip() in quickstart.splitlines()
    assert '".[test]"' in ci[0]
