"""The cross-package tests compile every program with ``VerificationLevel.ROUNDTRIP``: after each
pass the program is printed, parsed back and compared, so every pass dump of these tests' programs
is checked to be ``pl`` that reads back as the same program (issue #11), and a2a3sim checks that
every wake-up of a blocked core was signalled (``PYPTO_SIM_CHECK_WAKEUPS``). Tests about the disk
cache, which ROUNDTRIP bypasses, are marked ``disk_cache`` and run at the default level."""

import os
from pathlib import Path

import pytest

LEVEL_ENV = "PYPTO_VERIFICATION_LEVEL"
HERE = Path(__file__).resolve().parent

# a2a3sim re-checks a blocked core only when the state it waits on signals a change; here every
# wait is polled too, and a ready one whose state never signalled fails the run (and the test);
# and every block replayed by its control trace is checked against its full walk.
os.environ.setdefault("PYPTO_SIM_CHECK_WAKEUPS", "1")
os.environ.setdefault("PYPTO_SIM_CHECK_REPLAY", "1")


def pytest_configure(config):
    config.addinivalue_line("markers", "disk_cache: the test needs compiles to go through the disk cache")


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    """Import this directory's test modules with the ROUNDTRIP level set: a module-level
    ``RunConfig(...)`` takes its level when it is made, so the per-test environment below would
    come too late for it. Other directories' modules (the packages' own tests) are left alone."""
    ours = isinstance(collector, pytest.Module) and HERE in collector.path.parents
    before = os.environ.get(LEVEL_ENV)
    if ours:
        os.environ[LEVEL_ENV] = "roundtrip"
    try:
        yield
    finally:
        if ours and before is None:
            os.environ.pop(LEVEL_ENV, None)
        elif ours:
            os.environ[LEVEL_ENV] = before


@pytest.fixture(autouse=True)
def _roundtrip_every_compile(request, monkeypatch):
    if request.node.get_closest_marker("disk_cache") is None:
        monkeypatch.setenv(LEVEL_ENV, "roundtrip")
    else:
        monkeypatch.delenv(LEVEL_ENV, raising=False)


@pytest.fixture(autouse=True)
def _no_forced_terminal(monkeypatch):
    """rich takes any stream for a terminal when one of these is set (a CI runner's FORCE_COLOR,
    say); the tests decide for themselves what is a terminal."""
    from pypto.runtime.reports.progress import TERMINAL_VARIABLES

    for name in TERMINAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def batched_blocks(monkeypatch) -> list[int]:
    """The blocks a2a3sim walked for their numbers together (``pypto_sim_a2a3.fast.batch``), in the
    order it walked them: filled as the test's programs run."""
    from pypto_sim_a2a3.fast import replay

    batched: list[int] = []
    walk_batch = replay.walk_batch

    def counting(plan, placements, blocks, *args):
        frames = walk_batch(plan, placements, blocks, *args)
        batched.extend(blocks)
        return frames

    monkeypatch.setattr(replay, "walk_batch", counting)
    return batched
