"""The chip families (``BackendType``) and the installed platforms that provide each: which platform
a ``RunConfig(backend_type=...)`` runs on, and which families are supported at all."""

from __future__ import annotations

from pypto.ir import BackendType, PlatformError, PyptoError, SourceSpan

# The platform a family's programs run on when nothing else picks one: its simulator.
SIMULATORS = {BackendType.Ascend910B: "a2a3sim"}


class UnsupportedBackendError(PlatformError):
    """A ``BackendType`` no installed backend provides (``BackendType.Ascend950`` here)."""


def backend_type_of(platform: str) -> BackendType | None:
    """The family ``platform`` compiles for (by the chip of its target), or None when the platform is
    unknown or its chip is of no family ``BackendType`` names."""
    from pypto.runtime.platforms.registry import registry  # imported when asked: config imports this

    try:
        chip = registry().target(platform).name
    except PyptoError:
        return None
    return next((kind for kind in BackendType if kind.chip == chip), None)


def platforms_of(backend_type: BackendType) -> list[str]:
    """The installed platforms of ``backend_type``, in the registry's order."""
    from pypto.runtime.platforms.registry import list_platforms

    return [name for name in list_platforms() if backend_type_of(name) is backend_type]


def check_supported(backend_type: BackendType, span: SourceSpan | None = None) -> list[str]:
    """The installed platforms of ``backend_type``; an :class:`UnsupportedBackendError` when there
    are none."""
    from pypto.runtime.platforms.registry import list_platforms

    found = platforms_of(backend_type)
    if found:
        return found
    families = ", ".join(f"BackendType.{kind.name}" for kind in BackendType if platforms_of(kind))
    raise UnsupportedBackendError(
        f"BackendType.{backend_type.name} ({backend_type.generation}) is not supported by the "
        f"installed backends (platforms: {', '.join(list_platforms())})",
        span,
        hint=f"use {families or 'a platform `pypto platforms` lists'}, or install a backend plugin "
        f"for the {backend_type.generation} chips (docs/plugins.md)",
    )


def default_platform(backend_type: BackendType, session: str, span: SourceSpan | None = None) -> str:
    """The platform a ``RunConfig(backend_type=...)`` without ``platform`` runs on: the session's
    default ``session`` if it is of ``backend_type``, else the family's simulator (else its first
    installed platform)."""
    found = check_supported(backend_type, span)
    if backend_type_of(session) is backend_type:
        return session
    simulator = SIMULATORS.get(backend_type)
    return simulator if simulator in found else found[0]
