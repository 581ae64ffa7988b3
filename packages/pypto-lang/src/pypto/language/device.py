"""What a launch can count on: ``pl.system.available_cluster_count()`` and
``pl.system.available_aiv_count()``, the core groups and the vector cores of the chip.

A program is parsed before it is given a platform, so these read the a2a3 target description
(``pypto/ir/targets/a2a3.toml``), which every platform of this project compiles for. They are
compile-time numbers: ``for i in pl.spmd(pl.system.available_cluster_count()):`` sizes a launch
to the whole chip, as a hard ``pl.system.syncall`` needs.
"""

from __future__ import annotations

from pypto.ir.targets import get_target

DEVICE_TARGET = "a2a3"


def available_cluster_count() -> int:
    """The core groups (clusters of 1 AIC + 2 AIV) a mixed or cube kernel can launch on: 24 on a2a3."""
    return get_target(DEVICE_TARGET).core_groups


def available_aiv_count() -> int:
    """The vector cores a vector-only kernel can launch on: 48 on a2a3 (2 per core group)."""
    target = get_target(DEVICE_TARGET)
    return target.core_groups * target.aiv_per_group
