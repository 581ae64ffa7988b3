"""The generator and the harness are plain modules beside the test: make them importable."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
