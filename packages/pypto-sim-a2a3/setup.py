"""The build of pypto-sim-a2a3's compiled timing core (everything else is in pyproject.toml).

One C extension, ``pypto_sim_a2a3.hw._corepipes``, built from source at install time. It is
*optional*: where no C compiler works, setuptools warns and the package installs without it, and
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
        )
    ]
)
