"""The a2a3 chip the simulator models: :data:`A2A3_TARGET` is ``pypto.ir.targets.get_target("a2a3")``.

Every a2a3 chip figure lives once, in ``pypto/ir/targets/a2a3.toml``; the simulator reads them
from the target, so a second target (a second data file) can differ. Throughputs are modeling
constants, not measurements. The links between chips of a world (:data:`A2A3_INTERCONNECT`) are
here, with the public figures they come from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum

from pypto.ir import MemorySpace, Target
from pypto.ir.targets import get_target

A2A3_TARGET = get_target("a2a3")


class CoreKind(Enum):
    """The two kinds of core in a core group."""

    AIC = "AIC"  # cube core
    AIV = "AIV"  # vector core


def core_memory_spaces(target: Target, kind: CoreKind) -> tuple[MemorySpace, ...]:
    """The on-chip memory spaces a core of ``kind`` owns on ``target`` (the data file says)."""
    return target.spaces_of(kind.value)


@dataclass(frozen=True)
class Interconnect:
    """The chip-to-chip links of a world of chips: each directed link between two ranks moves
    ``gbytes_per_s`` and a transfer reaches the peer ``latency_ns`` after it leaves.

    ``A2A3_INTERCONNECT.link_cycles(1024, clock_mhz=1850)`` -> cycles of a 1 KiB transfer."""

    name: str
    latency_ns: float  # from the first byte leaving to it landing in the peer's window
    gbytes_per_s: float  # one direction of one link between two chips
    source: str

    def latency_cycles(self, clock_mhz: float) -> int:
        return max(1, round(self.latency_ns * clock_mhz / 1000))

    def bytes_per_cycle(self, clock_mhz: float) -> float:
        return self.gbytes_per_s * 1000 / clock_mhz  # GB/s = bytes per ns

    def link_cycles(self, nbytes: int, clock_mhz: float) -> int:
        """Cycles ``nbytes`` keep one link busy (without the latency)."""
        if nbytes <= 0:
            return 0
        return max(1, math.ceil(nbytes / self.bytes_per_cycle(clock_mhz)))


# Public figures (modeling constants, not measurements of this simulator):
# - A2 (Atlas 800T A2, Ascend 910B): 8 NPUs in an HCCS full mesh, 392 GB/s of HCCS bandwidth per
#   NPU over its 7 links (Huawei Atlas 800T A2 product specification), so 56 GB/s per link.
# - A3 (Atlas 900 A3 SuperPoD / CloudMatrix384, Ascend 910C): over 392 GB/s of unidirectional UB
#   bandwidth per NPU through a non-blocking switch fabric, inter-node latency below 1 us (Zuo et
#   al., "Serving Large Language Models on Huawei CloudMatrix384", arXiv:2506.12708, 2025).
# The a2a3 target models a point-to-point link of the A2 mesh (the narrower of the two) with the
# 1 us latency bound of both.
A2_HCCS = Interconnect(
    "HCCS (Atlas 800T A2 full mesh)",
    1000.0,
    56.0,
    "Huawei Atlas 800T A2 specification: 392 GB/s HCCS / 7 links",
)
A3_UB = Interconnect(
    "UB (Atlas 900 A3 SuperPoD)", 1000.0, 392.0, "Zuo et al., CloudMatrix384, arXiv:2506.12708 (2025)"
)
A2A3_INTERCONNECT = A2_HCCS
