"""``@pl.autotune``: pick a kernel's fastest configuration by modeled time, as ``triton.autotune``
picks one by measured time.

>>> @pl.autotune(configs=[pl.Config(tile_m=64), pl.Config(tile_m=128)], key=["M"])
... @pl.jit
... def seed(a: pl.Tensor, b: pl.Tensor, bias: pl.Tensor, out: pl.Out[pl.Tensor]):
...     M, K = a.shape
...     ...  # reads tile_m as a compile-time constant

The body reads each config name as a compile-time constant, as it reads a module global or a
closure value (the config's value wins over a global of the same name, so ``tile_m = 64`` in the
module makes the kernel callable without the tuner too). A config name that is a parameter of
the kernel is passed as that argument instead. The first call for a key compiles and simulates
every config on copies of the arguments; the lowest modeled cycles (or ``objective=``) wins, the
choice is kept in memory and on disk (by key and source), and the call runs the winner.
"""

from __future__ import annotations

import ast
import functools
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pypto.ir import DynDim, PyptoError, RunReport, SourceSpan
from pypto.ir.tracebacks import call_site
from pypto.language.annotations import TensorSpec
from pypto.language.jit import JitFunction, _config, _user_errors
from pypto.language.kernel import JitKind
from pypto.language.parser.program import parse_program
from pypto.language.parser.resolve import GlobalNames, recording_reads
from pypto.language.parser.signature import signature_of
from pypto.runtime import settings
from pypto.runtime.compiling.cache import Uncacheable, cache_key, source_digest
from pypto.runtime.config import RunConfig
from pypto.runtime.platforms.registry import get_backend, get_target, registry
from pypto.tuning.sweep import (
    OBJECTIVE_CYCLES,
    Config,
    Executor,
    Trial,
    TrialJob,
    TrialOptions,
    TuneError,
    TuningCache,
    TuningReport,
    digest,
    run_sweep,
)

_HINT_PARAMS = "name a parameter, a pl.dynamic extent, or a name the body binds from a shape (M, K = a.shape)"


class _TunedNames(GlobalNames):
    """A kernel's names with one config's values in front of its closure and module globals."""

    def __init__(self, func: Callable[..., Any], constants: Mapping[str, Any]) -> None:
        super().__init__(func)
        self.constants = dict(constants)
        self.read: set[str] = set()

    def _lookup(self, name: str) -> tuple[bool, Any]:
        if name in self.constants:
            self.read.add(name)
            return True, self.constants[name]
        return super()._lookup(name)


class TunedKernel(JitFunction):
    """The kernel of one config: its body sees the config's values as constants."""

    def __init__(self, base: JitFunction, constants: Mapping[str, Any]) -> None:
        super().__init__(base.func, base.kind)
        self.constants = dict(constants)
        self.__dict__["source"] = base.source  # read once, by the tuned kernel

    @functools.cached_property
    def names(self) -> _TunedNames:
        return _TunedNames(self.func, self.constants)


class Autotuner:
    """A ``@pl.jit`` kernel under ``@pl.autotune``: call it as the kernel itself.

    ``best_config``: the config the last call ran; ``report``: that key's :class:`TuningReport`
    (every trial: config, modeled cycles, roofline ratio, overlap, memory high-water, feasible);
    ``cache``: key -> chosen config of this process; ``fn``: the kernel; ``last_report``: the
    last run's ``RunReport``.
    """

    def __init__(
        self,
        fn: JitFunction,
        configs: Sequence[Config],
        key: Sequence[str],
        prune_configs_by: Mapping[str, Any] | None,
        options: TrialOptions,
        workers: int | None,
        scheduler: str | None,
        use_cache: bool,
        site: SourceSpan | None,
    ) -> None:
        functools.update_wrapper(self, fn.func)
        self.fn = fn
        self.configs = list(configs)
        self.keys = list(key)
        self.prune_configs_by = dict(prune_configs_by or {})
        self.options = options
        self.workers = workers
        self.scheduler = scheduler
        self.use_cache = use_cache
        self.site = site
        self.cache: dict[tuple[Any, ...], Config] = {}
        self.reports: dict[tuple[Any, ...], TuningReport] = {}
        self.best_config: Config | None = None
        self.report: TuningReport | None = None
        self.last_report: RunReport | None = None
        self._variants: dict[int, TunedKernel] = {}

    @property
    def name(self) -> str:
        return self.fn.name

    def __repr__(self) -> str:
        return f"<pl.autotune of {self.fn!r}: {len(self.configs)} config(s), key={self.keys}>"

    # ------------------------------------------------------------ calling

    @_user_errors
    def __call__(self, *args: Any, config: RunConfig | None = None, **kwargs: Any) -> Any:
        """Tune on the first call for this key (in later processes: from the disk cache), then run
        the chosen config on the arguments."""
        run_config = _config(config)
        report = self._tuned(args, kwargs, run_config, None, force=False)
        return self._run_best(report, args, kwargs, run_config)

    @_user_errors
    def tune(
        self,
        *args: Any,
        config: RunConfig | None = None,
        workers: int | None = None,
        scheduler: str | None = None,
        executor: Executor | None = None,
        on_trial: Callable[[Trial], None] | None = None,
        force: bool = True,
        **kwargs: Any,
    ) -> TuningReport:
        """Sweep the configs for these arguments without running the winner on them; returns the
        :class:`TuningReport`. ``workers=`` / ``scheduler=`` override the decorator's; ``force``
        (default) sweeps even when the choice is cached. The arguments are never written."""
        from pypto.tuning.cluster import make_executor

        run_config = _config(config)
        chosen = executor or make_executor(
            self.workers if workers is None else workers, scheduler or self.scheduler
        )
        return self._tuned(args, kwargs, run_config, chosen, force=force, on_trial=on_trial)

    def with_configs(self, configs: Sequence[Config]) -> Autotuner:
        """The same tuner (kernel, key, options) over other configs, e.g. a command line's grid."""
        runs = (self.options, self.workers, self.scheduler, self.use_cache, self.site)
        return Autotuner(self.fn, configs, self.keys, self.prune_configs_by, *runs)

    def variant(self, config: Config) -> TunedKernel:
        """The kernel of ``config`` (one of the tuner's configs), to call, lower or compile."""
        for index, known in enumerate(self.configs):
            if known == config:
                return self._variant(index)
        raise TuneError(
            f"{config!r} is not one of the configs of {self.name}", self.site, "pass one of its configs"
        )

    def _variant(self, index: int) -> TunedKernel:
        if index not in self._variants:
            params = self._param_names()
            constants = {k: v for k, v in self.configs[index].kwargs.items() if k not in params}
            self._variants[index] = TunedKernel(self.fn, constants)
        return self._variants[index]

    def _run_best(
        self, report: TuningReport, args: tuple[Any, ...], kwargs: dict[str, Any], run_config: RunConfig
    ) -> Any:
        best = report.best
        assert best is not None
        kernel = self._variant(best.index)
        result = kernel(*args, config=run_config, **{**kwargs, **self._param_values(best.config)})
        self.last_report = kernel.last_report
        return result

    # ------------------------------------------------------------ choosing

    def _tuned(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        run_config: RunConfig,
        executor: Executor | None,
        force: bool,
        on_trial: Callable[[Trial], None] | None = None,
    ) -> TuningReport:
        self._check_kwargs(kwargs)
        named = self._named(args, kwargs)
        key = (*self._key_values(named), run_config.platform_name)
        report = None if force else self.reports.get(key)
        if report is None:
            report = self._from_disk_or_swept(key, args, kwargs, named, run_config, executor, force, on_trial)
        self.reports[key] = report
        self.report = report
        if report.best is not None:
            self.cache[key] = report.best.config
            self.best_config = report.best.config
        return report

    def _from_disk_or_swept(
        self,
        key: tuple[Any, ...],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        named: dict[str, Any],
        run_config: RunConfig,
        executor: Executor | None,
        force: bool,
        on_trial: Callable[[Trial], None] | None,
    ) -> TuningReport:
        """Every config is parsed here first; the disk cache is keyed by what the parses gave (as
        the compile cache is), so a changed global the body reads, or a changed helper kernel,
        sweeps again. A choice found there is used; else the jobs run and the choice is stored."""
        jobs, shared = self._jobs(args, kwargs, named, run_config)
        store = TuningCache(settings.cache_dir()) if self.use_cache and settings.cache_enabled() else None
        disk_key = self._disk_key(key, jobs, run_config) if store is not None else None
        if store is not None and disk_key is not None and not force:
            cached = store.report(disk_key, self.name, key, self.configs)
            if cached is not None and cached.best is not None:
                return cached
        if executor is None:
            from pypto.tuning.cluster import make_executor

            executor = make_executor(self.workers, self.scheduler)
        objective = (
            OBJECTIVE_CYCLES if self.options.objective is None else _callable_name(self.options.objective)
        )
        report = run_sweep(self.name, key, jobs, shared, executor, on_trial, objective)
        if store is not None and disk_key is not None:
            store.store(disk_key, report)
        if report.best is None:
            self.report = report
            same = _one_error([trial.error for trial in report.trials])
            if same is not None:  # every config failed alike: a mistake of the kernel, shown as it is
                same.report = report  # type: ignore[attr-defined]
                raise same
            reasons = "; ".join(f"{t.config.label}: {t.message.splitlines()[0]}" for t in report.trials)
            error = TuneError(
                f"no config of {self.name} ran: {reasons}",
                self.site,
                "add configs that fit (smaller tiles, shallower rings); the error's .report (and the "
                "kernel's) holds every trial with its reason",
            )
            error.report = report
            raise error
        return report

    def _jobs(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], named: dict[str, Any], run_config: RunConfig
    ) -> tuple[list[TrialJob], list[Any]]:
        """One job per config left after pruning, each parsed; and the arguments the jobs share
        (the tensors, in parameter order; a job carries its own scalars)."""
        jobs: list[TrialJob] = []
        shared: list[Any] = []
        read: set[str] = set()
        parsed_any = False
        for index in self._pruned(named, kwargs):
            job, values, names_read = self._job(index, args, kwargs, run_config)
            jobs.append(job)
            if values is not None and not shared:
                shared = [value if _is_tensor(value) else None for value in values]
            if job.error is None:
                parsed_any = True
                read |= names_read
        if parsed_any:
            self._check_read(read)
        return jobs, shared

    def _job(
        self, index: int, args: tuple[Any, ...], kwargs: dict[str, Any], run_config: RunConfig
    ) -> tuple[TrialJob, tuple[Any, ...] | None, set[str]]:
        """The trial job of config ``index``: its parse here, its compile and run wherever it runs."""
        config = self.configs[index]
        kernel = self._variant(index)
        kernel.names.read.clear()
        call_kwargs = {**kwargs, **self._param_values(config)}
        try:
            spec = kernel._specialize(args, call_kwargs, running=True)
            with recording_reads():
                program = parse_program(kernel, spec.params)
        except PyptoError as err:
            job = TrialJob(index, config, None, run_config, (), error=err, options=self.options)
            return job, None, set()
        names = tuple(param.name for param in spec.params)
        own = {i: value for i, value in enumerate(spec.args) if not _is_tensor(value)}
        job = TrialJob(
            index, config, program, run_config, names, spec.constants, options=self.options, own=own
        )
        return job, spec.args, set(kernel.names.read)

    def _pruned(self, named: dict[str, Any], kwargs: dict[str, Any]) -> list[int]:
        """The indices of the configs to try: ``early_config_prune`` first, then the ``top_k``
        best by ``perf_model``, as Triton's ``prune_configs_by`` does."""
        indices = list(range(len(self.configs)))
        prune = self.prune_configs_by.get("early_config_prune")
        if prune is not None:
            kept = list(prune([self.configs[i] for i in indices], named, **kwargs))
            indices = []
            for config in kept:
                matches = [i for i, known in enumerate(self.configs) if known == config and i not in indices]
                if not matches:
                    raise TuneError(
                        f"early_config_prune returned {config!r}, not one of the configs of {self.name}",
                        self.site,
                        "return a subset of the configs it was given",
                    )
                indices.append(matches[0])
        model = self.prune_configs_by.get("perf_model")
        top_k = self.prune_configs_by.get("top_k")
        if model is not None and top_k is not None:
            count = int(top_k * len(indices)) if isinstance(top_k, float) and top_k <= 1.0 else int(top_k)
            estimates = {
                i: model(**{**named, **self.configs[i].kwargs}) for i in indices
            }  # named: kwargs too
            indices = sorted(indices, key=lambda i: (estimates[i], i))[: max(1, count)]
            indices.sort()
        if not indices:
            raise TuneError(
                f"prune_configs_by left no config of {self.name}", self.site, "keep at least one config"
            )
        return indices

    # ------------------------------------------------------------ keys

    def _param_names(self) -> set[str]:
        return {sig.name for sig in signature_of(self.fn)}

    def _param_values(self, config: Config) -> dict[str, Any]:
        params = self._param_names()
        return {name: value for name, value in config.kwargs.items() if name in params}

    def _check_kwargs(self, kwargs: dict[str, Any]) -> None:
        tuned = {name for config in self.configs for name in config.kwargs}
        clash = sorted(tuned & set(kwargs))
        if clash:
            raise TuneError(
                f"{self.name}() got {', '.join(clash)}, which its configs choose",
                call_site(),
                "leave the tuned values to the configs (or call the kernel without @pl.autotune)",
            )

    def _named(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments by parameter name, defaults included (tuned ones may be absent)."""
        try:
            bound = self.fn.python_signature.bind_partial(*args, **kwargs)
        except TypeError as exc:
            raise TuneError(
                f"{self.name}(): {exc}", call_site(), f"{self.name} takes {self.fn.python_signature}"
            ) from None
        bound.apply_defaults()
        return dict(bound.arguments)

    def _key_values(self, named: dict[str, Any]) -> tuple[Any, ...]:
        """The values of ``key``'s names for this call, and every tensor argument's dtype."""
        values: list[Any] = []
        for name in self.keys:
            values.append((name, self._key_value(name, named)))
        dtypes = tuple(str(value.dtype) for value in named.values() if hasattr(value, "dtype"))
        return (*values, dtypes)

    def _key_value(self, name: str, named: dict[str, Any]) -> Any:
        if name in named:
            value = named[name]
            shape = getattr(value, "shape", None)
            return tuple(shape) if shape is not None else value
        for param, axis in self._extent_names().get(name, ()):
            shape = getattr(named.get(param), "shape", None)
            if shape is not None and axis < len(shape):
                return int(shape[axis])
        known = sorted({*named, *self._extent_names()})
        raise TuneError(
            f"key name {name!r} of @pl.autotune is no parameter of {self.name} nor an extent it reads "
            f"(it knows: {', '.join(known)})",
            self.site,
            _HINT_PARAMS,
        )

    @functools.cached_property
    def _extents(self) -> dict[str, list[tuple[str, int]]]:
        """Names of extents: ``pl.dynamic("M")`` in an annotation, and ``M, K = a.shape`` /
        ``M = a.shape[0]`` at the top of the body, each as (parameter, axis) pairs."""
        found: dict[str, list[tuple[str, int]]] = {}
        for sig in signature_of(self.fn):
            spec = sig.spec
            if isinstance(spec, TensorSpec) and spec.shape is not None:
                for axis, dim in enumerate(spec.shape):
                    if isinstance(dim, DynDim):
                        found.setdefault(dim.name, []).append((sig.name, axis))
        params = self._param_names()
        for stmt in self.fn.source.tree.body:
            if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
                continue
            for name, param, axis in _shape_bindings(stmt.targets[0], stmt.value, params):
                found.setdefault(name, []).append((param, axis))
        return found

    def _extent_names(self) -> dict[str, list[tuple[str, int]]]:
        return self._extents

    def _check_read(self, read: set[str]) -> None:
        params = self._param_names()
        unread = sorted({n for c in self.configs for n in c.kwargs} - params - read)
        if unread:
            raise TuneError(
                f"the configs of {self.name} set {', '.join(unread)}, which is neither a parameter of "
                f"{self.name} nor a name its body reads",
                self.site,
                "read the name in the kernel's body (as a compile-time constant), make it a parameter, "
                "or drop it from the configs",
            )

    def _disk_key(self, key: tuple[Any, ...], jobs: Sequence[TrialJob], run_config: RunConfig) -> str | None:
        """The name of this sweep's entry in the tuning cache: the key values, what each config
        parsed to (by the compile cache's key of the parsed program, which holds the compiler's
        and the backend plugin's versions; or the parse error), the source of the backend's
        package (its cost model), which configs were tried, the objective and the runs per
        trial. None when a program has no stable key."""
        try:
            target = get_target(run_config.platform_name, run_config.platform_origin)
            provider = str(registry().origin(run_config.platform_name))
            parsed = [
                (job.index, job.config.label)
                + (
                    (cache_key(job.program, target, run_config, provider), sorted(job.constants.items()))
                    if job.program is not None
                    else (repr(job.error), str(job.error.span) if job.error is not None else "")
                )
                for job in jobs
            ]
        except Uncacheable:
            return None
        objective = self.options.objective
        return digest(
            key,
            parsed,
            _backend_source(run_config),
            None if objective is None else (_callable_name(objective), _source_of(objective)),
            self.options.warmup,
            self.options.rep,
        )


def _backend_source(run_config: RunConfig) -> str | None:
    """The hash of the source of the package that holds the platform's backend (its cost model);
    None without a backend (then every trial fails, telling why)."""
    try:
        backend = get_backend(run_config.platform_name, run_config.platform_origin)
    except PyptoError:
        return None
    return source_digest(type(backend).__module__)


def _shape_bindings(target: ast.expr, value: ast.expr, params: set[str]) -> Iterable[tuple[str, str, int]]:
    """``M, K = a.shape`` -> (M, a, 0), (K, a, 1); ``N = b.shape[1]`` -> (N, b, 1)."""
    if (
        isinstance(value, ast.Attribute)
        and value.attr == "shape"
        and isinstance(value.value, ast.Name)
        and value.value.id in params
        and isinstance(target, ast.Tuple)
    ):
        for axis, element in enumerate(target.elts):
            if isinstance(element, ast.Name):
                yield element.id, value.value.id, axis
    if (
        isinstance(target, ast.Name)
        and isinstance(value, ast.Subscript)
        and isinstance(value.slice, ast.Constant)
        and isinstance(value.slice.value, int)
        and isinstance(value.value, ast.Attribute)
        and value.value.attr == "shape"
        and isinstance(value.value.value, ast.Name)
        and value.value.value.id in params
    ):
        yield target.id, value.value.value.id, value.slice.value


_PRUNE_KEYS = ("early_config_prune", "perf_model", "top_k")


def _check_argument_names(
    fn: JitFunction,
    options: TrialOptions,
    prune_configs_by: Mapping[str, Any] | None,
    site: SourceSpan | None,
) -> None:
    """``reset_to_zero`` / ``restore_value`` name parameters of the kernel, and
    ``prune_configs_by`` holds only the keys it knows: checked when the decorator is applied, at
    its line, since a trial would otherwise fail on each config for the same misspelled name."""
    params = list(fn.python_signature.parameters)
    for label, names in (("reset_to_zero", options.reset_to_zero), ("restore_value", options.restore_value)):
        unknown = [name for name in names if name not in params]
        if unknown:
            raise TuneError(
                f"{label}= names {', '.join(map(repr, unknown))}, which is no parameter of {fn.name}",
                site,
                f"name arguments of {fn.name}: {', '.join(params)}",
            )
    unknown_keys = sorted(set(prune_configs_by or {}) - set(_PRUNE_KEYS))
    if unknown_keys:
        raise TuneError(
            f"prune_configs_by has {', '.join(map(repr, unknown_keys))}, which it does not know",
            site,
            f"its keys are {', '.join(_PRUNE_KEYS)}",
        )


def _one_error(errors: Sequence[PyptoError | None]) -> PyptoError | None:
    """The error when every one of several trials was rejected with the same one (kind, message
    and line); a single config's rejection stays a reason in the TuneError that lists them."""
    if len(errors) < 2 or any(err is None for err in errors):
        return None
    kinds = {(type(err), err.message, str(err.span)) for err in errors if err is not None}
    return errors[0] if len(kinds) == 1 else None


def _is_tensor(value: Any) -> bool:
    return callable(getattr(value, "clone", None)) and hasattr(value, "dtype")


def _callable_name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def _source_of(fn: Callable[..., Any]) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return ""


def autotune(
    configs: Sequence[Config],
    key: Sequence[str] = (),
    prune_configs_by: Mapping[str, Any] | None = None,
    objective: Callable[[RunReport], float] | None = None,
    warmup: int = 0,
    rep: int = 1,
    reset_to_zero: Sequence[str] | None = None,
    restore_value: Sequence[str] | None = None,
    pre_hook: Callable[[dict[str, Any]], Any] | None = None,
    post_hook: Callable[[dict[str, Any]], Any] | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    cache_results: bool = True,
) -> Callable[[JitFunction], Autotuner]:
    """``@pl.autotune(configs=[pl.Config(...), ...], key=["M", "N"])`` above ``@pl.jit``.

    - ``configs``: the :class:`pl.Config` to try; the body reads their names as constants.
    - ``key``: names whose values select a tuning (parameters, ``pl.dynamic`` extents, or names the
      body binds from a shape); every tensor argument's dtype and the platform count too.
    - ``prune_configs_by``: ``{"early_config_prune": fn(configs, named_args, **kwargs),
      "perf_model": fn(**named_args, **config), "top_k": n}`` as in Triton.
    - ``objective``: ``fn(run_report) -> float``, lower is better (default: modeled cycles).
    - ``warmup`` / ``rep``: runs per trial before measuring / measured (the median counts).
      Modeled time is deterministic, so these matter only for an objective or hook that varies.
    - ``reset_to_zero`` / ``restore_value``: argument names zeroed / given back the caller's values
      before each run of a trial (trials always run on copies of the arguments).
    - ``pre_hook`` / ``post_hook``: ``fn(named_args)`` around each run of a trial.
    - ``workers`` / ``scheduler``: run the sweep on a Dask ``LocalCluster`` of that many processes,
      or on the cluster at that address (default: serially in this process, unless
      ``PYPTO_DASK_SCHEDULER`` or ``PYPTO_TUNE_WORKERS`` say otherwise).
    - ``cache_results``: keep the choice on disk (in the compile cache directory, ``tuning/``).
    """
    site = call_site()
    configs = list(configs) if isinstance(configs, (list, tuple)) else configs
    if not isinstance(configs, list) or not configs or not all(isinstance(c, Config) for c in configs):
        raise TuneError(
            f"@pl.autotune takes configs=[pl.Config(...), ...], got {configs!r}",
            site,
            "pass a non-empty list such as configs=[pl.Config(tile_m=64), pl.Config(tile_m=128)]",
        )
    if isinstance(key, str) or not all(isinstance(name, str) for name in key):
        raise TuneError(
            f"@pl.autotune takes key=[names], got {key!r}", site, 'pass a list of names, e.g. key=["M", "N"]'
        )
    for label, count, least in (("warmup", warmup, 0), ("rep", rep, 1)):
        if not isinstance(count, int) or isinstance(count, bool) or count < least:
            raise TuneError(
                f"@pl.autotune {label}={count!r}", site, f"{label} is a number of runs, {least} or more"
            )
    for label, names in (("reset_to_zero", reset_to_zero), ("restore_value", restore_value)):
        if names is not None and (isinstance(names, str) or not all(isinstance(n, str) for n in names)):
            raise TuneError(
                f"@pl.autotune takes {label}=[names], got {names!r}",
                site,
                f'pass a list of argument names, e.g. {label}=["out"]',
            )
    options = TrialOptions(
        objective=objective,
        warmup=warmup,
        rep=rep,
        reset_to_zero=tuple(reset_to_zero or ()),
        restore_value=tuple(restore_value or ()),
        pre_hook=pre_hook,
        post_hook=post_hook,
    )

    def decorate(fn: Any) -> Autotuner:
        if not isinstance(fn, JitFunction) or fn.kind is not JitKind.entry:
            got = type(fn).__name__ if not isinstance(fn, JitFunction) else fn.kind.value
            raise TuneError(
                f"@pl.autotune decorates a @pl.jit kernel, got {got}",
                site,
                "write @pl.autotune(...) directly above @pl.jit",
            )
        where = site or fn.source.span(fn.source.tree)  # made by the pypto command: the kernel's def
        _check_argument_names(fn, options, prune_configs_by, where)
        tuned = (prune_configs_by, options, workers, scheduler, cache_results, where)
        return Autotuner(fn, configs, key, *tuned)

    return decorate


__all__ = ["Autotuner", "Config", "TunedKernel", "autotune"]
