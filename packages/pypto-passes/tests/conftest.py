import sys
from pathlib import Path

# Test helper modules (passes_irbuild) sit beside the tests.
sys.path.insert(0, str(Path(__file__).parent))
