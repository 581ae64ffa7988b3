"""pypto.models — real models written in the pl DSL (populated by the models track)."""

__version__ = "0.1.0"

# Registry of model names -> module paths; empty until the first model lands.
MODELS: dict[str, str] = {}
