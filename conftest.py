"""Every test run keeps its compile cache in a temporary directory, never the user's cache."""

import os
import shutil
import tempfile

_CACHE_DIR = "PYPTO_CACHE_DIR"


def pytest_configure(config):
    config._pypto_cache_dir = tempfile.mkdtemp(prefix="pypto-test-cache-")
    os.environ[_CACHE_DIR] = config._pypto_cache_dir


def pytest_unconfigure(config):
    shutil.rmtree(config._pypto_cache_dir, ignore_errors=True)
