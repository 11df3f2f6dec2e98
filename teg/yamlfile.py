"""Loading YAML a user wrote (machine tables, model parameters, validation suites) so that it
cannot blow up or be read two ways.

Mechanism, in three passes over the text (libyaml when available):

1. the *event* stream is read first, and refused at the first anchor or alias (``&a`` / ``*a``:
   an alias bomb composes a few lines into gigabytes) and at the first collection nested deeper
   than :data:`MAX_DEPTH` (libyaml's parser is quadratic in the nesting depth and its composer
   recursive: a line of 100,000 ``[`` crashes the process). The events are produced lazily, so a
   refused input costs only the events up to the problem;
2. the node tree is composed, and every mapping is checked for a key written twice (YAML would
   silently keep the last one);
3. the document is constructed from that tree with the safe constructor.

Problems are :class:`YamlError` with the 1-based line.
"""

from __future__ import annotations

from typing import Any

import yaml

from teg import TegError

MAX_DEPTH = 64
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)     # libyaml when available
_OPEN = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSE = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


class YamlError(TegError):
    """YAML text that is refused: ``line`` (1-based, None when unknown) and ``problem``."""

    def __init__(self, problem: str, line: int | None = None):
        self.problem = problem
        self.line = line
        super().__init__(f"line {line}: {problem}" if line is not None else problem)


def _line(mark) -> int | None:
    return mark.line + 1 if mark is not None else None


def _check_events(text: str) -> None:
    depth = 0
    for ev in yaml.parse(text, Loader=_LOADER):
        if isinstance(ev, yaml.AliasEvent) or getattr(ev, "anchor", None) is not None:
            raise YamlError("YAML anchors and aliases (&name, *name) are not allowed", _line(ev.start_mark))
        if isinstance(ev, _OPEN):
            depth += 1
            if depth > MAX_DEPTH:
                raise YamlError(f"nested deeper than {MAX_DEPTH} levels", _line(ev.start_mark))
        elif isinstance(ev, _CLOSE):
            depth -= 1


def _check_keys(node: yaml.Node) -> None:
    """Refuse a mapping that names a key twice (iteratively: the depth is bounded, but no recursion
    is needed)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, yaml.MappingNode):
            seen: dict[str, int | None] = {}
            for knode, vnode in n.value:
                key = str(knode.value) if isinstance(knode, yaml.ScalarNode) else repr(knode.value)
                if key in seen:
                    raise YamlError(f"duplicate key {key!r} (first at line {seen[key]})", _line(knode.start_mark))
                seen[key] = _line(knode.start_mark)
                stack.append(vnode)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)


def load_yaml(text: str) -> tuple[Any, yaml.Node | None]:
    """The document of ``text`` and its node tree (None for an empty document); raises
    :class:`YamlError` for refused or malformed YAML (see the module docstring)."""
    try:
        _check_events(text)
        loader = _LOADER(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None, None
            _check_keys(node)
            return loader.construct_document(node), node
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if "maximum nesting depth" in problem:
            # libyaml 0.2.5+ (PyYAML 6.0.4 wheels) refuses deep nesting itself while scanning
            # ahead, before the event check sees the first level past MAX_DEPTH: the same refusal
            raise YamlError(f"nested deeper than {MAX_DEPTH} levels", _line(mark)) from None
        raise YamlError(f"invalid YAML: {problem}", _line(mark)) from None
    except (ValueError, OverflowError, RecursionError) as exc:    # constructor: a date or number out of range
        raise YamlError(f"invalid YAML value: {exc}") from None


def load_yaml_file(path, what: str = "YAML file", max_bytes: int = 1 << 20) -> Any:
    """The document of the YAML file ``path`` (read by :func:`teg.textfile.read_text`: a regular
    UTF-8 file of at most ``max_bytes``); every problem is one :class:`teg.textfile.TextFileError`
    ``FILE[:LINE]: problem``."""
    from teg.textfile import TextFileError, read_text

    text = read_text(path, max_bytes, what)
    try:
        return load_yaml(text)[0]
    except YamlError as exc:
        raise TextFileError(path, exc.problem, exc.line) from None
