"""Machine tables teg writes itself (``teg calibrate``): the comment lines that frame them.

A generated table starts with :data:`HEADER` and announces, on that first line, the line it ends
with (:data:`END`). A copy cut short anywhere — a killed writer of an older teg, a truncated
transfer — lacks that last line, and :func:`truncation` says so, where YAML alone would often
load the cut file as a valid table with fewer overrides. Tables whose first line does not
announce the end line (hand-written ones, or older teg's) are not checked.
"""

from __future__ import annotations

from pathlib import Path

HEADER = "# Machine table written by `teg calibrate`"
END = "# end of the table written by teg calibrate"
_ANNOUNCE = f"its last line is '{END}'"


def frame(body: str, about: str, note: str) -> str:
    """The whole file: first line (header + ``about`` + the end-line announcement), ``note`` as a
    second comment line, the YAML ``body``, and the end line."""
    return f"{HEADER} {about}; {_ANNOUNCE}.\n# {note}\n{body.rstrip(chr(10))}\n{END}\n"


def truncation(text: str) -> str | None:
    """Why ``text`` is not a complete generated table (None when it is, or is not generated)."""
    first = text.split("\n", 1)[0]
    if not (first.startswith(HEADER) and _ANNOUNCE in first):
        return None
    last = text.rstrip("\n").rsplit("\n", 1)[-1].rstrip()
    if last == END:
        return None
    return (f"truncated: this table was written by teg calibrate, which ends it with the line '{END}', "
            "but that line is missing (run teg calibrate again)")


def written_by_teg(path: Path) -> bool:
    """Whether the file at ``path`` is a table ``teg calibrate`` wrote (its first line)."""
    from teg.fileio import file_head

    return file_head(path).decode("utf-8", errors="replace").startswith(HEADER)
