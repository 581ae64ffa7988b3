"""Every test run keeps its compile cache and its compiled programs' output directories in a
temporary directory, never the user's cache or ./build_output."""

import os
import shutil
import tempfile

_CACHE_DIR = "PYPTO_CACHE_DIR"
_BUILD_DIR = "PYPTO_PROG_BUILD_DIR"


def pytest_configure(config):
    config._pypto_cache_dir = tempfile.mkdtemp(prefix="pypto-test-cache-")
    os.environ[_CACHE_DIR] = config._pypto_cache_dir
    os.environ.setdefault(_BUILD_DIR, os.path.join(config._pypto_cache_dir, "build_output"))


def pytest_unconfigure(config):
    shutil.rmtree(config._pypto_cache_dir, ignore_errors=True)
