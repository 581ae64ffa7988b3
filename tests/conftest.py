"""The cross-package tests compile every program with ``VerificationLevel.ROUNDTRIP``: after each
pass the program is printed, parsed back and compared, so every pass dump of these tests' programs
is checked to be ``pl`` that reads back as the same program (issue #11). Tests about the disk
cache, which ROUNDTRIP bypasses, are marked ``disk_cache`` and run at the default level."""

import os

import pytest

LEVEL_ENV = "PYPTO_VERIFICATION_LEVEL"


def pytest_configure(config):
    config.addinivalue_line("markers", "disk_cache: the test needs compiles to go through the disk cache")
    # Set before the test modules are imported: a module-level RunConfig(...) takes its level
    # when it is made, so a per-test environment would come too late for it.
    os.environ[LEVEL_ENV] = "roundtrip"


@pytest.fixture(autouse=True)
def _roundtrip_every_compile(request, monkeypatch):
    if request.node.get_closest_marker("disk_cache") is None:
        monkeypatch.setenv(LEVEL_ENV, "roundtrip")
    else:
        monkeypatch.delenv(LEVEL_ENV)
