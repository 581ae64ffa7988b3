"""torchref: a plain-torch reference executor of lowered PyPTO programs (an example plugin)."""

from pypto_backend_torchref.backend import TORCHREF_TARGET, TorchRefBackend

__version__ = "0.1.0"

__all__ = ["TORCHREF_TARGET", "TorchRefBackend", "__version__"]
