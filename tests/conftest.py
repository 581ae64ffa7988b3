"""The cross-package tests compile every program with ``VerificationLevel.ROUNDTRIP``: after each
pass the program is printed, parsed back and compared, so every pass dump of these tests' programs
is checked to be ``pl`` that reads back as the same program (issue #11). Tests about the disk
cache, which ROUNDTRIP bypasses, are marked ``disk_cache`` and run at the default level."""

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "disk_cache: the test needs compiles to go through the disk cache")


@pytest.fixture(autouse=True)
def _roundtrip_every_compile(request, monkeypatch):
    if request.node.get_closest_marker("disk_cache") is None:
        monkeypatch.setenv("PYPTO_VERIFICATION_LEVEL", "roundtrip")
