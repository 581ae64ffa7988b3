"""``pypto.ir.pass_manager``: the pass manager as PyPTO code imports it.

>>> from pypto.ir.pass_manager import OptimizationStrategy, PassManager
>>> PassManager.get_strategy(OptimizationStrategy.Default).run_passes(program)  # doctest: +SKIP

``OptimizationStrategy`` is plain data of this floor. ``PassManager`` is
``pypto.passes.PassManager``, a floor above: it is imported when first read, so that importing
this module (and ``pypto.ir``) needs no pypto-passes (a ``MissingPackageError`` names the package
when it is absent).
"""

from __future__ import annotations

from typing import Any

from pypto.ir.compile_options import OptimizationStrategy


def __getattr__(name: str) -> Any:
    if name == "PassManager":
        from pypto.ir.compiling import offered

        return offered(name)
    raise AttributeError(f"module 'pypto.ir.pass_manager' has no attribute {name!r}")


__all__ = ["OptimizationStrategy", "PassManager"]  # noqa: F822 - PassManager: __getattr__
