import pypto.language as pl
import pypto.models


def test_models_package_imports_beside_the_language():
    assert pypto.models.__version__ == "0.1.0"
    assert isinstance(pypto.models.MODELS, dict)
    assert callable(pl.jit)
