"""The platform registry: backends, compile-only targets and passes contributed by ``pypto`` plugins.

Plugins come from the ``pypto`` entry-point group (restricted by ``PYPTO_LOAD_PLUGINS=a,b``;
set but empty loads none; a name no installed plugin has is a :class:`PluginWarning`) and from
:func:`register_plugin`. Nothing loads until first use. The chips :mod:`pypto.ir.targets`
describes (``a2a3``) can be compiled for by name with no plugin installed (they are not listed
as platforms); a plugin's target of the same name takes their place.

>>> get_backend("a2a3sim").run(program, tensors, {})  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pluggy

from pypto.ir import Backend, PlatformError, Target
from pypto.ir import targets as builtin_targets
from pypto.ir.tracebacks import call_site
from pypto.passes import PassEntry, PassRegistrationError, PassRegistry
from pypto.runtime.platforms import hookspecs
from pypto.runtime.platforms.hookspecs import ENTRY_POINT_GROUP, PROJECT
from pypto.runtime.settings import CONFIG_TABLE, DEFAULT, PLATFORM_ENV, Origin

LOAD_PLUGINS_ENV = "PYPTO_LOAD_PLUGINS"


class PluginWarning(UserWarning):
    """``PYPTO_LOAD_PLUGINS`` names a plugin that is not installed."""


class SimulatedPlatformWarning(UserWarning):
    """A run on a chip's platform (``a2a3``) for which no device backend is installed runs on that
    chip's simulator (``a2a3sim``) instead; given once per platform and process."""


@dataclass(frozen=True)
class PluginOrigin:
    """Where a plugin came from: its name and, for an entry point, its distribution and version."""

    plugin: str
    distribution: str | None = None
    version: str | None = None
    in_process: bool = False

    def __str__(self) -> str:
        if self.in_process:
            return f"plugin {self.plugin!r} (registered in-process)"
        if self.distribution is None:
            return f"plugin {self.plugin!r} (unknown distribution)"
        return f"plugin {self.plugin!r} (distribution {self.distribution} {self.version})"


@functools.cache
def built_in_origin() -> PluginOrigin:
    """Where a target that pypto.ir describes comes from when no plugin registered it."""
    return PluginOrigin("built-in", "pypto-ir", importlib.metadata.version("pypto-ir"))


@dataclass(frozen=True)
class PlatformEntry:
    """One registered platform, as ``pypto platforms`` lists it.

    ``kind`` is ``"backend"`` (it runs programs) or ``"target"`` (compile only); ``chip`` is the
    name of the target it compiles for.
    """

    name: str
    kind: str
    chip: str
    origin: PluginOrigin


def _selected_entry_points() -> list[importlib.metadata.EntryPoint]:
    eps = list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))
    allowed = os.environ.get(LOAD_PLUGINS_ENV)
    if allowed is None:
        return eps
    names = {name.strip() for name in allowed.split(",") if name.strip()}
    installed = sorted({ep.name for ep in eps})
    unknown = sorted(names - set(installed))
    if unknown:
        warnings.warn(
            f"{LOAD_PLUGINS_ENV} names {', '.join(map(repr, unknown))}, but no installed plugin is "
            f"called that (installed plugins: {', '.join(installed) or 'none'}); it is ignored",
            PluginWarning,
            stacklevel=2,
        )
    return [ep for ep in eps if ep.name in names]


class PlatformRegistry:
    """One plugin manager plus the backends, targets and passes its plugins registered."""

    def __init__(self, load_entry_points: bool = True) -> None:
        self.plugins = pluggy.PluginManager(PROJECT)
        self.plugins.add_hookspecs(hookspecs)
        self._origins: dict[str, PluginOrigin] = {}
        self._backends: dict[str, tuple[Backend, PluginOrigin]] | None = None
        self._targets: dict[str, tuple[Target, PluginOrigin]] | None = None
        self._passes: PassRegistry | None = None
        self._simulated: set[tuple[str, str]] = set()  # (platform, simulator) warned about
        if load_entry_points:
            for ep in _selected_entry_points():
                self._load_entry_point(ep)

    def _load_entry_point(self, ep: importlib.metadata.EntryPoint) -> None:
        dist = ep.dist
        origin = PluginOrigin(ep.name, dist.name if dist else None, dist.version if dist else None)
        if self.plugins.has_plugin(ep.name):
            raise PlatformError(
                f"two plugins are named {ep.name!r}: {self._origins[ep.name]} and {origin}",
                hint=f"uninstall one, or choose plugins with {LOAD_PLUGINS_ENV}",
            )
        try:
            plugin = ep.load()
        except Exception as exc:
            raise PlatformError(
                f"cannot load {origin}: {type(exc).__name__}: {exc}",
                hint=f"fix or uninstall it, or skip it with {LOAD_PLUGINS_ENV}",
            ) from exc
        self._add(plugin, ep.name, origin)

    def register_plugin(self, plugin: object, name: str | None = None) -> str:
        """Register a plugin object (a module or an instance with hookimpls); returns its name."""
        name = name or getattr(plugin, "__name__", None) or f"plugin-{id(plugin)}"
        return self._add(plugin, name, PluginOrigin(name, in_process=True))

    def _add(self, plugin: object, name: str, origin: PluginOrigin) -> str:
        try:
            registered = self.plugins.register(plugin, name=name)
            self.plugins.check_pending()
        except (ValueError, pluggy.PluginValidationError) as exc:
            raise PlatformError(f"cannot register {origin}: {exc}") from None
        assert registered is not None
        self._origins[registered] = origin
        self._backends = self._targets = None
        self._passes = None
        return registered

    def _collect(
        self,
    ) -> tuple[dict[str, tuple[Backend, PluginOrigin]], dict[str, tuple[Target, PluginOrigin]]]:
        if self._backends is None or self._targets is None:
            backends: dict[str, tuple[Backend, PluginOrigin]] = {}
            targets: dict[str, tuple[Target, PluginOrigin]] = {}
            self._call(self.plugins.hook.pypto_register_backends, backends, _check_backend, "backends")
            self._call(self.plugins.hook.pypto_register_targets, targets, _check_target, "targets")
            self._backends, self._targets = backends, targets
        return self._backends, self._targets

    def _call(
        self,
        hook: Any,
        table: dict[str, tuple[Any, PluginOrigin]],
        check: Callable[[Any, PluginOrigin], str],
        kind: str,
    ) -> None:
        """Call each plugin's implementation on its own, so every entry knows where it came from."""
        for impl, origin in self._impls(hook):

            def register(item: Any, origin: PluginOrigin = origin) -> None:
                name = check(item, origin)
                if name in table:
                    raise PlatformError(
                        f"two {kind} are named {name!r}: one from {table[name][1]}, one from {origin}",
                        hint=f"uninstall one of them, or choose plugins with {LOAD_PLUGINS_ENV}",
                    )
                table[name] = (item, origin)

            impl.function(**{arg: register for arg in impl.argnames})

    def _impls(self, hook: Any) -> list[tuple[Any, PluginOrigin]]:
        return [
            (impl, self._origins.get(impl.plugin_name, PluginOrigin(impl.plugin_name)))
            for impl in hook.get_hookimpls()
        ]

    def passes(self) -> PassRegistry:
        """The passes a pipeline may name: the built-in ones and every plugin's
        (``pypto_register_passes``); two of one name are a PlatformError naming both."""
        if self._passes is None:
            passes = PassRegistry()
            for impl, origin in self._impls(self.plugins.hook.pypto_register_passes):

                def register(cls: Any, origin: PluginOrigin = origin) -> PassEntry:
                    try:
                        return passes.register(cls, str(origin))
                    except PassRegistrationError as err:
                        hint = f"{err.hint}; or leave a plugin out with {LOAD_PLUGINS_ENV}"
                        raise PlatformError(err.message, hint=hint) from None

                impl.function(**{arg: register for arg in impl.argnames})
            self._passes = passes
        return self._passes

    def pipeline(self, name: str) -> tuple[str, PluginOrigin] | None:
        """The pipeline string platform ``name``'s backend asks for (its optional ``pipeline``
        attribute) and the plugin that registered it; None when it names none (or is no backend)."""
        backends, _ = self._collect()
        if name not in backends:
            return None
        backend, origin = backends[name]
        wanted = getattr(backend, "pipeline", None)
        if wanted is None:
            return None
        if not isinstance(wanted, str):
            raise PlatformError(
                f"backend {name!r} of {origin} has a pipeline attribute of {wanted!r}, not a pipeline string",
                hint='set it to a string such as "outline-scopes,tile-matmul{k_block=128},allocate", or None',
            )
        return wanted, origin

    def backend(self, name: str, named_by: Origin | None = None) -> Backend:
        """The backend registered as ``name``; a PlatformError says why there is none and, with
        ``named_by``, which setting named it."""
        backends, targets = self._collect()
        if name in backends:
            return backends[name][0]
        if name in targets or name in builtin_targets.target_names():
            same_chip = sorted(b for b, (backend, _) in backends.items() if backend.target.name == name)
            suggestion = same_chip or sorted(backends)
            hint = "install a backend plugin"
            if suggestion:
                instead = " or ".join(repr(s) for s in suggestion)
                where = _setting_example(named_by, suggestion[0])
                hint = f"run on {instead} instead, e.g. {where}"
            # A RunConfig(platform=...) is shown by the caret under it; any other setting is named.
            shown = named_by is not None and named_by.name.startswith("RunConfig")
            raise PlatformError(
                f"platform {name!r}{'' if shown else _from(named_by)} is a compile-only target here: "
                "running on it needs a device backend plugin, and none is installed",
                span=named_by.span if named_by else None,
                hint=hint,
            )
        raise self._unknown(name, named_by)

    def runner(self, name: str, named_by: Origin | None = None) -> Backend:
        """The backend a run on platform ``name`` uses: the one registered as ``name``; for a chip's
        platform with no device backend installed (``a2a3`` here), that chip's simulator (a backend
        with ``simulator = True`` whose target is the chip: ``a2a3sim``), with a one-time
        :class:`SimulatedPlatformWarning`; else the PlatformError of :meth:`backend`."""
        backends, targets = self._collect()
        if name in backends or not (name in targets or name in builtin_targets.target_names()):
            return self.backend(name, named_by)
        same_chip = sorted(b for b, (backend, _) in backends.items() if backend.target.name == name)
        devices = [b for b in same_chip if not is_simulator(backends[b][0])]
        simulators = [b for b in same_chip if is_simulator(backends[b][0])]
        if devices or not simulators:
            return self.backend(name, named_by)
        chosen = f"{name}sim" if f"{name}sim" in simulators else simulators[0]
        if (name, chosen) not in self._simulated:
            self._simulated.add((name, chosen))
            _warn_at_user_line(
                f"platform {name!r} has no device backend installed: running on {chosen!r}, its "
                f"simulator (the numbers are computed, the times modeled); compiling for {name!r} "
                "is unchanged",
                SimulatedPlatformWarning,
            )
        return backends[chosen][0]

    def target(self, name: str, named_by: Origin | None = None) -> Target:
        """The target a program for platform ``name`` is compiled for (a backend's target counts);
        ``named_by`` is the setting that named it, for the error when there is none."""
        backends, targets = self._collect()
        if name in targets:
            return targets[name][0]
        if name in backends:
            return backends[name][0].target
        if name in builtin_targets.target_names():
            return builtin_targets.get_target(name)
        raise self._unknown(name, named_by)

    def platforms(self) -> list[str]:
        """Every platform name: backends and compile-only targets, sorted."""
        backends, targets = self._collect()
        return sorted(set(backends) | set(targets))

    def entries(self) -> list[PlatformEntry]:
        """Every platform with its kind, chip and plugin, sorted by name."""
        backends, targets = self._collect()
        found = [PlatformEntry(n, "backend", b.target.name, o) for n, (b, o) in backends.items()]
        found += [PlatformEntry(n, "target", t.name, o) for n, (t, o) in targets.items() if n not in backends]
        return sorted(found, key=lambda entry: entry.name)

    def origin(self, name: str) -> PluginOrigin:
        """The plugin that registered platform ``name`` (its backend, else its target)."""
        backends, targets = self._collect()
        if name in backends:
            return backends[name][1]
        if name in targets:
            return targets[name][1]
        if name in builtin_targets.target_names():
            return built_in_origin()
        raise self._unknown(name)

    def register_commands(self, cli: Any) -> None:
        """Let every plugin add commands to the ``pypto`` Click group ``cli``."""
        self.plugins.hook.pypto_register_commands(cli=cli)

    def _unknown(self, name: str, named_by: Origin | None = None) -> PlatformError:
        known = ", ".join(self.platforms()) or "(none)"
        hint = f"install a backend plugin, or check {LOAD_PLUGINS_ENV} if it is set"
        if named_by == DEFAULT:
            hint = "install pypto-sim-a2a3 (the a2a3sim backend), or choose a platform with PYPTO_PLATFORM"
        elif named_by is not None:
            hint = f"change {named_by} to one of those, or install the plugin that provides {name!r}"
        if named_by is not None and os.environ.get(LOAD_PLUGINS_ENV) is not None:
            hint += f" ({LOAD_PLUGINS_ENV} is set: it may be what hides it)"
        return PlatformError(
            f"unknown platform {name!r}{_from(named_by)}; registered platforms: {known}",
            span=named_by.span if named_by else None,
            hint=hint,
        )


def is_simulator(backend: Backend) -> bool:
    """Whether ``backend`` simulates its chip (its optional ``simulator`` attribute)."""
    return bool(getattr(backend, "simulator", False))


def _warn_at_user_line(message: str, category: type[Warning]) -> None:
    """Warn at the user's line (their kernel call, their ``run(...)``), not at PyPTO's own."""
    span = call_site()
    if span is None:
        warnings.warn(message, category, stacklevel=2)
    else:
        warnings.warn_explicit(message, category, span.file, span.line)


def _from(named_by: Origin | None) -> str:
    return f" (from {named_by})" if named_by is not None else ""


def _setting_example(named_by: Origin | None, platform: str) -> str:
    """The setting that named the platform, written with ``platform`` instead."""
    if named_by is None or named_by == DEFAULT or named_by.name.startswith("RunConfig"):
        return f"RunConfig(platform={platform!r})"
    if named_by.name == PLATFORM_ENV:
        return f"{PLATFORM_ENV}={platform}"
    if named_by.name.startswith("-p"):
        return f"-p {platform}"
    if named_by.name.startswith(CONFIG_TABLE):
        return f'platform = "{platform}" in {CONFIG_TABLE}'
    return f"RunConfig(platform={platform!r})"


def _check_backend(item: Any, origin: PluginOrigin) -> str:
    if not isinstance(item, Backend) or not isinstance(item.target, Target):
        raise PlatformError(f"{origin} registered {item!r}, which is not a pypto.ir.Backend")
    return item.name


def _check_target(item: Any, origin: PluginOrigin) -> str:
    if not isinstance(item, Target):
        raise PlatformError(f"{origin} registered {item!r}, which is not a pypto.ir.Target")
    return item.name


_registry: PlatformRegistry | None = None


def registry() -> PlatformRegistry:
    """The process-wide registry, loading the entry-point plugins on first use."""
    global _registry
    if _registry is None:
        _registry = PlatformRegistry()
    return _registry


def reset_registry(load_entry_points: bool = True) -> None:
    """Forget every plugin (for tests). With ``load_entry_points=False`` the next registry starts
    empty; otherwise the entry points load again on next use: ``reset_registry(False)``."""
    global _registry
    _registry = None if load_entry_points else PlatformRegistry(load_entry_points=False)


def register_plugin(plugin: object, name: str | None = None) -> str:
    """Register hook implementations in-process: ``register_plugin(MyPlugin(), name="mine")``."""
    return registry().register_plugin(plugin, name)


def get_backend(platform: str, named_by: Origin | None = None) -> Backend:
    """The backend that runs ``platform``: ``get_backend("a2a3sim")``; for a chip's platform with no
    device backend installed, the chip's simulator (``get_backend("a2a3")`` is the a2a3sim
    backend, with a one-time :class:`SimulatedPlatformWarning`). ``named_by`` (e.g.
    ``RunConfig.platform_origin``) is the setting that named it, which an error then names."""
    return registry().runner(platform, named_by)


def get_target(platform: str, named_by: Origin | None = None) -> Target:
    """The target ``platform`` compiles for: ``get_target("a2a3")`` (``named_by`` as for
    :func:`get_backend`)."""
    return registry().target(platform, named_by)


def list_platforms() -> list[str]:
    """Registered platform names: ``list_platforms()`` -> ``["a2a3", "a2a3sim"]``."""
    return registry().platforms()


__all__ = [
    "LOAD_PLUGINS_ENV",
    "PlatformEntry",
    "PlatformRegistry",
    "PluginOrigin",
    "PluginWarning",
    "SimulatedPlatformWarning",
    "get_backend",
    "get_target",
    "is_simulator",
    "list_platforms",
    "register_plugin",
    "registry",
    "reset_registry",
]
