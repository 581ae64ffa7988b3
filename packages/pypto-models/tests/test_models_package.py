import importlib.metadata

import pypto.language as pl
import pypto.models


def test_models_package_imports_beside_the_language():
    assert pypto.models.__version__ == importlib.metadata.version("pypto-models")
    assert callable(pl.jit)
