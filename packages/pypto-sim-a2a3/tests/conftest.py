import sys
from pathlib import Path

# Test helper modules (sim_lowered, sim_mixed) sit beside the tests.
sys.path.insert(0, str(Path(__file__).parent))
