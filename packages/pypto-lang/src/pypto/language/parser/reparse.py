"""Parsing a loop body more than once: how the parser keeps the valid shapes of carried tiles.

Whether an iteration changes a carried tile's valid shape is known only once the body is parsed
(:class:`pypto.ir.validflow.CarriedValid`); when it does, the body is parsed again with the
extent carried. A parse that is not kept gives back the names it took and shows no warnings.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def parse_round(namer: Any, env: Any, body: Any, keep: list[bool]) -> Iterator[None]:
    """One parse of a loop body that may be parsed again. Unless it is the one kept
    (``keep[0]`` when it ends), the names it took and the names it ended are given back and its
    warnings are not shown (the next parse shows its own)."""
    taken, ended = set(namer.taken), dict(env.ended)
    try:
        with warnings.catch_warnings(record=True) as recorded:
            warnings.simplefilter("always")
            yield
    except BaseException:
        _show(recorded)
        raise
    if keep[0]:
        _show(recorded)
        return
    # What the parse made outside the body stays: the scope's block index, the views it localized.
    kept = [body.block_idx, *body.localized.values()]
    namer.taken = taken | {v.name for v in kept if v is not None}
    env.ended = ended


def _show(recorded: list[warnings.WarningMessage]) -> None:
    for w in recorded:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
