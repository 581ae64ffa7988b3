import os
import sys
from pathlib import Path

# Test helper modules (sim_lowered, sim_mixed) sit beside the tests.
sys.path.insert(0, str(Path(__file__).parent))
# Every wait is polled as well as signalled: a wake-up whose state never signalled fails the run.
os.environ.setdefault("PYPTO_SIM_CHECK_WAKEUPS", "1")
