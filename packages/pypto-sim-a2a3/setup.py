"""The build of pypto-sim-a2a3's compiled timing core (everything else is in pyproject.toml).

Two C extensions, built from source at install time: ``pypto_sim_a2a3.hw._corepipes`` (the pipes
of a core) and ``pypto_sim_a2a3.engine._scheduler`` (the event loop). Each is *optional*: where no
C compiler works, setuptools warns and the package installs without them, and
the simulator runs on its Python engine (the reference) with a one-line notice (docs/engine.md).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "pypto_sim_a2a3.hw._corepipes",
            ["src/pypto_sim_a2a3/hw/_corepipes.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "pypto_sim_a2a3.engine._scheduler",
            ["src/pypto_sim_a2a3/engine/_scheduler.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
    ]
)
