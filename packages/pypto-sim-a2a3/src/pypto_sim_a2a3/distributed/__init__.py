"""A world of simulated chips: the HOST orchestrator, window buffers, signals and their ordering,
the chip-to-chip interconnect, and the collectives (issue 37's distributed model).

``A2A3SimBackend().run_world(program, args, options, ranks=2)`` runs a lowered program whose entry
is the HOST orchestrator on two chips and returns a ``WorldReport``; ``WindowStore`` keeps window
buffers across runs (``options["windows"]``).
"""

from pypto_sim_a2a3.distributed import kernel_ops as _kernel_ops  # registers the kernel's dist ops
from pypto_sim_a2a3.distributed.windows import WINDOW_FLOOR, WindowStore

__all__ = ["WINDOW_FLOOR", "WindowStore"]
del _kernel_ops
