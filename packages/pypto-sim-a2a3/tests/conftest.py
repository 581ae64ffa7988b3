import os
import sys
from pathlib import Path

# Test helper modules (sim_lowered, sim_mixed) sit beside the tests.
sys.path.insert(0, str(Path(__file__).parent))
# Every wait is polled as well as signalled: a wake-up whose state never signalled fails the run;
# every block replayed by its control trace is checked against its full walk.
os.environ.setdefault("PYPTO_SIM_CHECK_WAKEUPS", "1")
os.environ.setdefault("PYPTO_SIM_CHECK_REPLAY", "1")
