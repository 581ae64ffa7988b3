"""Golden-text comparison: set PYPTO_UPDATE_GOLDEN=1 to rewrite the expected files."""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN_DIR = Path(__file__).parent / "golden"


def check_golden(name: str, actual: str) -> None:
    path = GOLDEN_DIR / name
    if os.environ.get("PYPTO_UPDATE_GOLDEN") == "1":
        path.write_text(actual)
    expected = path.read_text()
    assert actual == expected, f"{path} differs; rerun with PYPTO_UPDATE_GOLDEN=1 and review the diff"
