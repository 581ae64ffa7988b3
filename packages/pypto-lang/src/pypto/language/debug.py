"""``pl.debug``: look inside a running kernel.

``pl.debug.print("acc", acc, i)`` prints labels and values on every core that runs it (on the
simulator: prefixed by core, lane, block and modeled cycle); ``pl.debug.breakpoint()`` stops a
run on the simulator where a core reaches it and opens the kernel debugger. Both are written in
kernel code only (an InCore function, a ``pl.at`` / ``pl.incore`` scope, a mixed, split or spmd
kernel), are read by the parser like every ``pl`` op, and take no modeled time. See
docs/debugging.md.
"""

from __future__ import annotations

from pypto.language.builtins import Builtin

# The parser reads calls of these (see pypto.language.parser.exprs.ExprParser.debug_call).
print = Builtin("debug.print", op="debug.print")
breakpoint = Builtin("debug.breakpoint", op="debug.breakpoint")

__all__ = ["breakpoint", "print"]
