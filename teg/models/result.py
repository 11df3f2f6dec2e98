"""Common shape of an analytical model's answer."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ModelResult:
    """``cycles``: the model's estimate for the whole kernel in SM clock cycles of the machine;
    ``seconds``: the same as time. Subclasses add the model's intermediate metrics as fields."""

    model: str
    cycles: float
    seconds: float

    def metrics(self) -> dict[str, Any]:
        """The intermediate metrics (every field except ``model``/``cycles``/``seconds``), JSON-ready:
        infinities become ``None``."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if f.name in ("model", "cycles", "seconds"):
                continue
            out[f.name] = plain(getattr(self, f.name))
        return out


def plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value):
        return {k: plain(v) for k, v in dataclasses.asdict(value).items()}
    return value
