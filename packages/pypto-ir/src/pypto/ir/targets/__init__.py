"""The chips PyPTO compiles for, as data: one TOML file per target, read into a :class:`Target`.

``get_target("a2a3")`` is the a2a3 chip of ``a2a3.toml`` beside this module; every layer
(the passes, ``platform="a2a3"``, the a2a3 simulator, tests) reads its numbers from there. A
second chip is a second file: ``load_target(path)`` reads one from anywhere, and a file put
beside ``a2a3.toml`` is a built-in target by its stem. The schema is in docs/ir.md ("Targets").
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pypto.ir.errors import PlatformError
from pypto.ir.target import MemorySpec, Target
from pypto.ir.types import MemorySpace

_REQUIRED = ("name", "core_groups", "aic_per_group", "aiv_per_group", "clock_mhz", "memory", "data_paths")
_OPTIONAL = ("max_pipe_slots", "default_slot_num", "cost", "calibration")
_MEMORY_KEYS = ("capacity", "usable", "alignment", "core")


def target_names() -> list[str]:
    """The built-in targets, sorted: ``target_names() == ["a2a3"]``."""
    files = resources.files(__name__).iterdir()
    return sorted(Path(f.name).stem for f in files if f.name.endswith(".toml"))


@cache
def get_target(name: str) -> Target:
    """The built-in target ``name``, read once: ``get_target("a2a3").usable(MemorySpace.Vec)``."""
    if name not in target_names():
        raise PlatformError(
            f"no built-in target {name!r}; the built-in targets are {', '.join(target_names())}",
            hint="name one of those, or read your own file with pypto.ir.targets.load_target(path)",
        )
    source = resources.files(__name__).joinpath(f"{name}.toml")
    return parse_target(source.read_text(encoding="utf-8"), f"{name}.toml")


def load_target(path: str | Path) -> Target:
    """The target described by the TOML file at ``path``."""
    path = Path(path)
    return parse_target(path.read_text(encoding="utf-8"), str(path))


def parse_target(text: str, where: str = "<target>") -> Target:
    """The target described by the TOML ``text`` (``where`` names it in errors)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _bad(where, f"is not valid TOML: {exc}") from None
    _check_keys(where, "", data, _REQUIRED, _OPTIONAL)
    calibration = {name: _points(where, name, pts) for name, pts in data.get("calibration", {}).items()}
    cost = {**_fitted_lines(calibration), **data.get("cost", {})}
    return Target(
        name=data["name"],
        core_groups=data["core_groups"],
        aic_per_group=data["aic_per_group"],
        aiv_per_group=data["aiv_per_group"],
        clock_mhz=data["clock_mhz"],
        memory={_space(where, name): _memory(where, name, spec) for name, spec in data["memory"].items()},
        data_paths=frozenset(_path(where, pair) for pair in data["data_paths"]),
        max_pipe_slots=data.get("max_pipe_slots", 8),
        default_slot_num=data.get("default_slot_num", 2),
        cost=cost,
        calibration=calibration,
    )


def _fitted_lines(calibration: Mapping[str, tuple[tuple[float, float], ...]]) -> dict[str, float]:
    """``<name>_bytes_per_cycle`` and ``<name>_latency_cycles`` of the line through each pair of
    calibration points (bytes, cycles)."""
    constants = {}
    for name, ((small_bytes, small_cycles), (large_bytes, large_cycles)) in calibration.items():
        rate = (large_bytes - small_bytes) / (large_cycles - small_cycles)
        constants[f"{name}_bytes_per_cycle"] = rate
        constants[f"{name}_latency_cycles"] = small_cycles - small_bytes / rate
    return constants


def _memory(where: str, name: str, spec: Any) -> MemorySpec:
    if not isinstance(spec, dict):
        raise _bad(where, f"memory.{name} must be a table such as {{ capacity = 1024, usable = 1024 }}")
    _check_keys(where, f"memory.{name}.", spec, ("capacity", "usable"), _MEMORY_KEYS[2:])
    return MemorySpec(spec["capacity"], spec["usable"], spec.get("alignment", 32), spec.get("core", ""))


def _space(where: str, name: str) -> MemorySpace:
    try:
        return MemorySpace[name]
    except KeyError:
        spaces = ", ".join(s.name for s in MemorySpace)
        raise _bad(where, f"names memory space {name!r}; the spaces are {spaces}") from None


def _path(where: str, pair: Any) -> tuple[MemorySpace, MemorySpace]:
    if not (isinstance(pair, list) and len(pair) == 2):
        raise _bad(where, f"data_paths holds {pair!r}; each path is [source, destination]")
    return _space(where, pair[0]), _space(where, pair[1])


def _points(where: str, name: str, points: Any) -> tuple[tuple[float, float], ...]:
    if not (isinstance(points, list) and len(points) == 2 and all(len(p) == 2 for p in points)):
        raise _bad(where, f"calibration.{name} must be two [bytes, cycles] points")
    (b0, c0), (b1, c1) = points
    if b0 == b1 or c0 == c1:
        raise _bad(where, f"calibration.{name}: the two points must differ in bytes and in cycles")
    return (b0, c0), (b1, c1)


def _check_keys(
    where: str, prefix: str, data: Mapping[str, Any], required: tuple[str, ...], optional: tuple[str, ...]
) -> None:
    missing = [key for key in required if key not in data]
    if missing:
        raise _bad(where, f"lacks {', '.join(prefix + key for key in missing)}")
    unknown = [key for key in data if key not in required + optional]
    if unknown:
        known = ", ".join(prefix + key for key in required + optional)
        raise _bad(where, f"has unknown key(s) {', '.join(prefix + key for key in unknown)}; known: {known}")


def _bad(where: str, problem: str) -> PlatformError:
    return PlatformError(f"target file {where} {problem}", hint="see the Targets section of docs/ir.md")
