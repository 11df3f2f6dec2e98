"""Fuzz-style robustness: random mutations of real SASS lines either parse or raise SassParseError —
never another exception (hypothesis)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from teg.sass import SassParseError, parse_text

FIXTURES = Path(__file__).parent / "fixtures" / "sass"


def _sample_lines() -> list[str]:
    lines: list[str] = []
    for name in ("kernels.sm_90.sass", "kernels.sm_75.nvdisasm_hex.sass", "kernels.sm_120.nvdisasm.sass",
                 "teg_listing3.sass"):
        text = (FIXTURES / name).read_text().splitlines()
        lines.extend(text[:: max(1, len(text) // 400)])
    return [line for line in lines if line.strip()]


LINES = _sample_lines()
HEAD = "\tcode for sm_90\n\t\tFunction : fuzzed\n"
ALPHABET = st.sampled_from(list("RPUZ0123456789xabcdef.,;:[]{}()|!-+~@`$/* \t_TSXc") + ["\x00", "é", "\u2028"])


@st.composite
def mutated(draw):
    line = draw(st.sampled_from(LINES))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["insert", "delete", "replace", "duplicate", "truncate", "swap"]))
        n = len(line)
        i = draw(st.integers(0, max(0, n - 1)))
        if kind == "insert":
            line = line[:i] + draw(ALPHABET) + line[i:]
        elif kind == "delete" and n:
            line = line[:i] + line[i + 1:]
        elif kind == "replace" and n:
            line = line[:i] + draw(ALPHABET) + line[i + 1:]
        elif kind == "duplicate":
            j = draw(st.integers(i, n))
            line = line[:j] + line[i:j] + line[j:]
        elif kind == "truncate":
            line = line[:i]
        elif kind == "swap":
            parts = line.split(",")
            if len(parts) > 2:
                a, b = draw(st.integers(0, len(parts) - 1)), draw(st.integers(0, len(parts) - 1))
                parts[a], parts[b] = parts[b], parts[a]
                line = ",".join(parts)
    return line


def _parse_or_error(text: str) -> None:
    try:
        programs = parse_text(text, source="fuzz", demangle=False)
    except SassParseError as exc:
        assert exc.source == "fuzz" and exc.line >= 1
        return
    for p in programs:
        p.table()    # the flat arrays must build for whatever parsed


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_line_parses_or_raises_sass_error(line):
    _parse_or_error(HEAD + line + "\n")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(mutated(), min_size=2, max_size=8), st.lists(st.sampled_from(LINES), max_size=6))
def test_mutated_listing_parses_or_raises_sass_error(bad, good):
    _parse_or_error(HEAD + "\n".join(good + bad + good) + "\n")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_text_parses_or_raises_sass_error(text):
    _parse_or_error(HEAD + "        /*0000*/   " + text + "\n")
