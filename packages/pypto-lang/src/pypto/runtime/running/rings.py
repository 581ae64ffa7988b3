"""The runtime's four rings, as ``RunConfig`` sizes them: ``ring_task_window``, ``ring_heap``,
``ring_dep_pool``.

The orchestration's tasks hold runtime resources from their submission until the runtime
reclaims them: a slot of a **task window**, the bytes of the tensors they are the first to write
in a **heap**, and one entry per dependency edge in a **dep pool**. There are four independent
rings of the three, and a task uses ring ``min(scope_depth, 3)`` (docs/compiler.md, "Runtime
rings"). Each field takes an int (every ring that size) or a list of exactly 4 ints (rings 0..3,
an entry of 0 leaving that ring at its default); None leaves the field to the environment
(``PTO2_RING_TASK_WINDOW``, ``PTO2_RING_HEAP``, ``PTO2_RING_DEP_POOL``: the same forms, a list
written ``a,b,c,d``), else to the backend's default.

>>> normalize(RING_FIELDS[1], 1 << 20)
(1048576, 1048576, 1048576, 1048576)
>>> resolve(RING_FIELDS[0], [0, 64, 0, 0], {"PTO2_RING_TASK_WINDOW": "128"})
(128, 64, 128, 128)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pypto.runtime.settings import ConfigError

RING_COUNT = 4  # ring_idx = min(scope_depth, 3)
INT32_MAX = 2**31 - 1

Sizes = tuple[int, int, int, int]  # per ring 0..3; 0: the backend's default


def _power_of_two_at_least(low: int) -> Callable[[int], bool]:
    return lambda n: n >= low and n & (n - 1) == 0


@dataclass(frozen=True)
class RingField:
    """One sized resource of the rings: the ``RunConfig`` field, its unit, the rule each ring's
    size obeys (in words for messages), the environment variable that sizes it when the field is
    None, and a good value for hints."""

    name: str
    unit: str
    rule: str
    accepts: Callable[[int], bool]
    env: str
    example: str
    note: str = ""

    def check_entry(self, value: int, where: str) -> None:
        if not self.accepts(value):
            raise ConfigError(
                f"{where} must be {self.rule} ({self.unit} per ring), got {value}",
                hint=f"{self.note}write it like {self.name}={self.example}; a list of 4 sizes rings "
                f"0..3 (0 leaves a ring at its default), None leaves the field to {self.env} or the "
                "backend's default",
            )


RING_FIELDS: tuple[RingField, ...] = (
    RingField(
        "ring_task_window", "task slots", "a power of two >= 4", _power_of_two_at_least(4),
        "PTO2_RING_TASK_WINDOW", "1024",
    ),
    RingField(
        "ring_heap", "bytes", "a power of two >= 1024", _power_of_two_at_least(1024),
        "PTO2_RING_HEAP", "1048576", "ring_heap counts bytes, not buffers: ",
    ),
    RingField(
        "ring_dep_pool", "dependency-edge entries", f"in [4, {INT32_MAX}]", lambda n: 4 <= n <= INT32_MAX,
        "PTO2_RING_DEP_POOL", "4096",
    ),
)  # fmt: skip


def normalize(ring: RingField, value: Any, where: str | None = None) -> Sizes | None:
    """``value`` of field ``ring`` as four per-ring sizes (0: the default), None for None; a
    value of the wrong kind or a size the rule rejects is a ``ConfigError`` (``where`` names the
    setting in it, by default ``RunConfig.<field>``)."""
    where = where or f"RunConfig.{ring.name}"
    if value is None:
        return None
    if _is_int(value):
        if value == 0:
            return (0, 0, 0, 0)  # broadcast: every ring at its default, as a list of four 0s
        ring.check_entry(value, where)
        return (value, value, value, value)
    if isinstance(value, (list, tuple)) and all(_is_int(v) for v in value):
        if len(value) != RING_COUNT:
            raise ConfigError(
                f"{where} takes an int or a list of exactly {RING_COUNT} ints (rings 0..3), got a "
                f"list of {len(value)}",
                hint=f"give one size per ring, 0 for a ring left at its default: {ring.name}="
                f"[{ring.example}, 0, 0, 0]; or one int for every ring",
            )
        for index, entry in enumerate(value):
            if entry != 0:
                ring.check_entry(entry, f"{where}[{index}]")
        return (value[0], value[1], value[2], value[3])
    raise ConfigError(
        f"{where} takes an int or a list of {RING_COUNT} ints, got {type(value).__name__} {value!r}",
        hint=f"write it like {ring.name}={ring.example}, or leave it None",
    )


def from_environment(ring: RingField, environ: Mapping[str, str] | None = None) -> Sizes | None:
    """The sizes the ring's environment variable gives (``128`` or ``128,64,0,0``), None when unset;
    a value that is no such size is a ConfigError naming the variable."""
    text = (os.environ if environ is None else environ).get(ring.env, "").strip()
    if not text:
        return None
    try:
        parts = [int(part, 0) for part in text.split(",")]
    except ValueError:
        raise ConfigError(
            f"{ring.env}={text!r} is not a size", hint=f"set it to an int, or 4 ints a,b,c,d ({ring.unit})"
        ) from None
    return normalize(ring, parts[0] if len(parts) == 1 else parts, ring.env)


def resolve(ring: RingField, given: Sequence[int] | None, environ: Mapping[str, str] | None = None) -> Sizes:
    """Each ring's size: the config's entry if not 0, else the environment's, else 0 (the
    backend's default)."""
    env = from_environment(ring, environ) or (0, 0, 0, 0)
    mine = tuple(given) if given is not None else (0, 0, 0, 0)
    picked = [m or e for m, e in zip(mine, env, strict=True)]
    return (picked[0], picked[1], picked[2], picked[3])


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


__all__ = [
    "INT32_MAX",
    "RING_COUNT",
    "RING_FIELDS",
    "RingField",
    "Sizes",
    "from_environment",
    "normalize",
    "resolve",
]
