"""Golden-text comparison: expected outputs live in ``tests/golden/<name>.txt``.

Set ``PYPTO_UPDATE_GOLDEN=1`` to rewrite them from the current output (then review the diff).
"""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN_DIR = Path(__file__).parent / "golden"


def check_golden(name: str, actual: str) -> None:
    path = GOLDEN_DIR / name
    if os.environ.get("PYPTO_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(exist_ok=True)
        path.write_text(actual)
    assert actual == path.read_text(), f"{name} differs from the golden text"
