# The compiled timing core's CorePipes (_corepipes.c): the interface of hw/corepipes.py's CorePipes.
from collections.abc import Iterable, Sequence

import torch

from pypto.ir import Call
from pypto_sim_a2a3.engine.timeline import Recorder
from pypto_sim_a2a3.hw.corepipes import Dependency, Region
from pypto_sim_a2a3.hw.cores import Core
from pypto_sim_a2a3.hw.cost import OpCost

class CorePipes:
    core: Core
    recorder: Recorder
    flag_cycles: int
    @property
    def free(self) -> dict[str, int]: ...
    def __init__(self, core: Core, recorder: Recorder, flag_cycles: int) -> None: ...
    def drained(self, pipes: Iterable[str] | None = None) -> int: ...
    def ready(self, regions: Sequence[Region]) -> int: ...
    def last_read(self, regions: Sequence[Region]) -> tuple[int, str]: ...
    def gm_written(self, tensor: torch.Tensor) -> int: ...
    def run(
        self,
        cost: OpCost,
        call: Call | None,
        issue: int,
        reads: Sequence[Region] = (),
        writes: Sequence[Region] = (),
        gm_reads: Sequence[torch.Tensor] = (),
        gm_writes: Sequence[torch.Tensor] = (),
        after: Sequence[Dependency] = (),
        name: str | None = None,
    ) -> tuple[int, int]: ...
    def copied(self, source: Region, dest: Region) -> None: ...
