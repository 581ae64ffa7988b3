"""The world report's records, from ``pypto.ir.backend`` (the runtime's); until that lands on this
branch, a stand-in of the same fields."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

try:
    from pypto.ir.backend import LinkTransfer, WorldReport  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - removed once the runtime's records are merged

    @dataclass(frozen=True)
    class LinkTransfer:  # type: ignore[no-redef]
        src: int
        dst: int
        nbytes: int
        start: int
        end: int
        op: str
        span: str | None = None

    @dataclass
    class WorldReport:  # type: ignore[no-redef]
        chips: tuple[Any, ...]
        total_cycles: int
        clock_ghz: float
        transfers: tuple[LinkTransfer, ...] = ()
        device_ids: tuple[int, ...] = ()
        outputs: tuple[Any, ...] = ()
        modeled: bool = True


__all__ = ["LinkTransfer", "WorldReport"]
