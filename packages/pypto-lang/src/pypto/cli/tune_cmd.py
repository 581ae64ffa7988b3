"""``pypto tune SCRIPT::KERNEL``: sweep a kernel's configurations on the simulator and keep the one
with the fewest modeled cycles.

The configurations are the cartesian product of the ``--grid NAME=V1,V2,...`` options, or the
``configs=`` of a ``@pl.autotune`` kernel. The arguments are real tensors of the shapes ``--arg``
(or the annotations) give: seeded random values, zeros for ``pl.Out`` parameters. The trials run
as :meth:`pypto.tuning.autotune.Autotuner.tune` runs them: serially, on a Dask ``LocalCluster``
or on a running Dask cluster.
"""

from __future__ import annotations

import ast
import builtins
import enum
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from pypto.cli.arguments import call_arguments, parse_args, scalar_literal
from pypto.cli.errors import ArgumentError, PyptoCommand
from pypto.cli.run_cmd import PLATFORM_OPTION, check_platform
from pypto.cli.scripts import find_kernel, split_target
from pypto.ir import DataType, Direction
from pypto.language.annotations import TensorSpec
from pypto.language.jit import JitFunction
from pypto.language.parser.signature import signature_of
from pypto.runtime.config import RunConfig
from pypto.runtime.platforms.registry import registry
from pypto.runtime.reports.profiling import check_output_dir
from pypto.runtime.reports.progress import build_bar
from pypto.runtime.settings import ConfigError, Origin
from pypto.tuning.autotune import Autotuner, autotune
from pypto.tuning.sweep import OBJECTIVE_CYCLES, Config, Executor, Trial, TuningReport

if TYPE_CHECKING:  # rich and torch load only when a sweep runs
    from rich.progress import Progress

GRID_FORM = "NAME=V1,V2,..., e.g. --grid tile_m=64,128 or --grid split=UP_DOWN,NONE"
VALUE_FORMS = (
    "an integer, a decimal number, true or false, an enum member (UP_DOWN, SplitMode.UP_DOWN, "
    "pl.SplitMode.UP_DOWN) or a word (quote it, 'min', to keep an enum member's name a word)"
)
_QUOTES = ("'", '"')
DEFAULT_ROOT = Path("pypto_tune")
RESULTS_FILE = "results.csv"
PLOT_FILE = "cycles.png"
SMALL_INTS = (-8, 8)  # the range of random values for integer tensors


# ---------------------------------------------------------------- --grid


def _grid_error(option: str, problem: str, hint: str = f"write --grid {GRID_FORM}") -> ArgumentError:
    return ArgumentError(f"--grid {option}: {problem}", hint=hint)


def pl_enums() -> dict[str, type[enum.Enum]]:
    """The enums of ``pl`` by every name ``pl`` gives them (``Mem`` and ``MemorySpace`` alike)."""
    import pypto.language as pl

    found: dict[str, type[enum.Enum]] = {}
    for name in dir(pl):
        value = getattr(pl, name)
        if isinstance(value, type) and issubclass(value, enum.Enum) and value.__module__.startswith("pypto"):
            found[name] = value
    return found


def _members_named(name: str) -> list[enum.Enum]:
    """The members of ``pl``'s enums called ``name`` (one per enum that has one)."""
    enums = {id(cls): cls for cls in pl_enums().values()}.values()
    return [cls.__members__[name] for cls in enums if name in cls.__members__]


def _qualified_member(text: str, option: str) -> enum.Enum | None:
    """``SplitMode.UP_DOWN``, ``pl.SplitMode.UP_DOWN`` or ``pl.FP16`` -> the member; None when
    ``text`` is no such dotted name; an unknown enum or member is an error naming the known ones."""
    import pypto.language as pl

    parts = text.split(".")
    if len(parts) < 2 or not all(part.isidentifier() for part in parts):
        return None
    spelled_pl = parts[0] == "pl"
    if spelled_pl and len(parts) == 2:  # pl.FP16: a member pl exports by itself
        value = getattr(pl, parts[1], None)
        if isinstance(value, enum.Enum):
            return value
    enums = pl_enums()
    names = parts[1:] if spelled_pl else parts
    if len(names) != 2:
        if spelled_pl:
            raise _grid_error(option, f"{text!r} is no member of a pl enum", f"write {VALUE_FORMS}")
        return None
    owner, member = names
    if owner not in enums:
        if spelled_pl or owner[:1].isupper():
            known = ", ".join(sorted(enums))
            raise _grid_error(option, f"{text!r}: pl has no enum {owner!r}", f"name one of: {known}")
        return None
    cls = enums[owner]
    if member not in cls.__members__:
        known = ", ".join(cls.__members__)
        raise _grid_error(option, f"{text!r}: {owner} has no member {member!r}", f"name one of: {known}")
    return cls.__members__[member]


def grid_value(text: str, option: str) -> Any:
    """One ``--grid`` value: an int, a float, a bool, a ``pl`` enum member, else the word itself
    (a quoted word stays a word). Bare member names shared by two enums (``NONE``) are left for
    :func:`_resolve_members`, as a list of the candidates."""
    value = text.strip()
    if len(value) >= 2 and value[0] in _QUOTES and value[-1] == value[0]:
        return value[1:-1]
    literal = scalar_literal(value)
    if literal is not None:
        return literal
    member = _qualified_member(value, option)
    if member is not None:
        return member
    candidates = _members_named(value) if value.isidentifier() else []
    if len(candidates) == 1:
        return candidates[0]
    return candidates or value


def _resolve_members(values: list[Any], option: str) -> list[Any]:
    """A bare name several enums have (``NONE``: SplitMode's and AtomicType's) is the member of the
    enum the list's other members belong to; else an error that asks to qualify it."""
    known = {type(v) for v in values if isinstance(v, enum.Enum)}
    resolved = []
    for value in values:
        if isinstance(value, list):
            matching = [member for member in value if type(member) in known]
            if len(matching) != 1:
                owners = " and ".join(type(member).__name__ for member in value)
                name = value[0].name
                raise _grid_error(
                    option,
                    f"{name} is a member of {owners}",
                    f"qualify it, e.g. {type(value[-1]).__name__}.{name}",
                )
            value = matching[0]
        resolved.append(value)
    return resolved


def parse_grid(options: Sequence[str]) -> list[tuple[str, list[Any]]]:
    """``["tile_m=64,128", "split=UP_DOWN,NONE"]`` -> ``[("tile_m", [64, 128]), ("split", [...])]``."""
    axes: list[tuple[str, list[Any]]] = []
    for option in options:
        name, sep, text = option.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise _grid_error(option, f"{option!r} is not NAME=V1,V2,...")
        if not text.strip():
            raise _grid_error(option, f"{name} has no values")
        if any(name == known for known, _ in axes):
            hint = f"give all its values in one --grid {GRID_FORM}"
            raise _grid_error(option, f"{name} is given twice", hint)
        values = []
        for position, part in enumerate(text.split(","), start=1):
            if not part.strip():
                raise _grid_error(option, f"value {position} of {name} is empty")
            values.append(grid_value(part, option))
        values = _resolve_members(values, option)
        _check_distinct(values, option, name)
        axes.append((name, values))
    return axes


def _check_distinct(values: list[Any], option: str, name: str) -> None:
    seen: list[Any] = []
    for value in values:
        if any(type(value) is type(other) and value == other for other in seen):
            raise _grid_error(option, f"{name} takes {value!r} twice", "give each value once")
        seen.append(value)


def grid_configs(axes: Sequence[tuple[str, list[Any]]]) -> list[Config]:
    """The cartesian product of the axes, the first axis varying slowest."""
    names = [name for name, _ in axes]
    points = itertools.product(*(values for _, values in axes))
    return [Config(dict(zip(names, point, strict=True))) for point in points]


# ---------------------------------------------------------------- the tuner


def _undefined_names(kernel: JitFunction) -> list[str]:
    """The names the kernel's body reads that nothing defines, in the order the source reads them
    first: no parameter, local, closure value, module global or builtin (what ``--grid`` gives)."""
    loaded: list[ast.Name] = []
    stored: set[str] = set()
    for node in ast.walk(kernel.source.tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loaded.append(node)
        elif isinstance(node, ast.Name):
            stored.add(node.id)
        elif isinstance(node, ast.arg):
            stored.add(node.arg)
    func = kernel.func
    defined = stored | set(func.__globals__) | set(func.__code__.co_freevars) | set(dir(builtins))
    loaded.sort(key=lambda node: (node.lineno, node.col_offset))
    return list(dict.fromkeys(node.id for node in loaded if node.id not in defined))


def _names_read(kernel: JitFunction) -> set[str]:
    """Every name the kernel's source reads (a config name outside it cannot reach the body)."""
    return {
        node.id
        for node in ast.walk(kernel.source.tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }


def _check_grid_names(kernel: JitFunction, axes: Sequence[tuple[str, list[Any]]]) -> None:
    params = {sig.name for sig in signature_of(kernel)}
    read = _names_read(kernel)
    for name, values in axes:
        if name not in params and name not in read:
            shown = ",".join(str(v) for v in values)
            raise ArgumentError(
                f"--grid {name}={shown}: {kernel.name} neither reads {name} nor has a parameter {name}",
                hint=f"give the names its body reads as constants, e.g. "
                f"--grid {_example_name(kernel)}=..., or drop this --grid",
            )


def _example_name(kernel: JitFunction) -> str:
    undefined = _undefined_names(kernel)
    return undefined[0] if undefined else "tile_m"


def make_tuner(kernel: JitFunction | Autotuner, axes: Sequence[tuple[str, list[Any]]]) -> Autotuner:
    """The tuner to sweep: the grid's configs on the kernel (an Autotuner keeps its key and
    options, with the grid instead of its configs), else an Autotuner's own configs."""
    if isinstance(kernel, Autotuner):
        if not axes:
            return kernel
        _check_grid_names(kernel.fn, axes)
        return kernel.with_configs(grid_configs(axes))
    if not axes:
        undefined = _undefined_names(kernel)
        reads = ""
        if undefined:
            reads = f" (its body reads {', '.join(undefined)}, which the script does not define)"
        example = " ".join(f"--grid {name}=V1,V2" for name in undefined[:3]) or "--grid tile_m=64,128"
        raise ArgumentError(
            f"SCRIPT::KERNEL: {kernel.name} is a plain @pl.jit kernel, so there is nothing to sweep "
            f"without --grid{reads}",
            hint=f"give the values to try, e.g. {example}, or decorate it with @pl.autotune(configs=[...])",
        )
    _check_grid_names(kernel, axes)
    return autotune(configs=grid_configs(axes), key=[])(kernel)


# ---------------------------------------------------------------- the arguments


def _supplied(tuner: Autotuner) -> set[str]:
    """The parameters the configs pass (a config name that is a parameter's)."""
    params = {sig.name for sig in signature_of(tuner.fn)}
    return {name for config in tuner.configs for name in config.kwargs if name in params}


def tune_arguments(tuner: Autotuner, given: dict[str, Any]) -> dict[str, Any]:
    """The kernel's arguments by name, as real values: seeded random tensors (zeros for ``pl.Out``
    parameters) of the shapes ``--arg`` or the annotations give, scalars as given; none for the
    parameters the configs supply."""
    kernel = tuner.fn
    supplied = _supplied(tuner)
    clash = sorted(supplied & set(given))
    if clash:
        raise ArgumentError(
            f"--arg {clash[0]}: the configurations choose {clash[0]}, so it takes no --arg",
            hint=f"drop --arg {clash[0]}=..., or sweep it with --grid {clash[0]}=V1,V2",
        )
    placeholders = {name: tuner.configs[0].kwargs.get(name, 0) for name in supplied}
    values = call_arguments(kernel, {**given, **placeholders})
    import torch

    torch.manual_seed(0)
    made: dict[str, Any] = {}
    for sig in signature_of(kernel):
        if sig.name in supplied:
            continue
        value = values[sig.name]
        if isinstance(value, TensorSpec):
            output = isinstance(sig.spec, TensorSpec) and sig.spec.direction is Direction.Out
            value = _tensor(kernel, sig.name, value, output)
        made[sig.name] = value
    return made


def _tensor(kernel: JitFunction, name: str, spec: TensorSpec, output: bool) -> Any:
    """A torch tensor for ``spec``: zeros for an output, else random normal (floats) or small
    random integers."""
    import torch

    assert spec.dtype is not None and spec.shape is not None
    shape = tuple(dim for dim in spec.shape if isinstance(dim, int))
    if len(shape) != len(spec.shape):
        raise ArgumentError(
            f"parameter {name!r} of {kernel.name} is annotated {spec}, whose extents are not all numbers",
            hint=f"give its shape: --arg {name}={spec.dtype.name.lower()}[256,128]",
        )
    dtype = getattr(torch, spec.dtype.torch_name)
    if output:
        return torch.zeros(shape, dtype=dtype)
    if spec.dtype.is_float:
        return torch.randn(shape, dtype=torch.float32).to(dtype)
    if spec.dtype is DataType.BOOL:
        return torch.randint(0, 2, shape).to(torch.bool)
    low, high = spec.dtype.int_range
    return torch.randint(max(low, SMALL_INTS[0]), min(high, SMALL_INTS[1]) + 1, shape).to(dtype)


# ---------------------------------------------------------------- where the trials run


def check_executor_options(workers: int | None, scheduler: str | None) -> None:
    """``--scheduler`` and ``--workers`` together are an ArgumentError."""
    if scheduler is not None and workers is not None:
        raise ArgumentError(
            f"--scheduler {scheduler} and --workers {workers}: a sweep runs on a cluster or on local "
            "worker processes, not both",
            hint="drop --workers to use the cluster's workers, or drop --scheduler to start local ones",
        )


def make_sweep_executor(workers: int | None, scheduler: str | None, configs: int) -> Executor:
    """``--scheduler``: that cluster; ``--workers``: that many local processes (0 or 1: this
    process); neither: ``PYPTO_DASK_SCHEDULER``, ``PYPTO_TUNE_WORKERS``, else one process per core.
    A local cluster has no more processes than there are configurations."""
    from pypto.tuning.cluster import machine_workers, make_executor

    check_executor_options(workers, scheduler)
    if workers is not None:  # beats a cluster named in the environment: the command line wins
        return make_executor(min(workers, configs))
    return make_executor(None, scheduler, default_workers=min(machine_workers(), configs))


def trial_config(platform: str | None) -> RunConfig:
    """The RunConfig of the trials: ``-p`` (else the session's platform), which must run kernels,
    not only compile them."""
    check_platform(platform)
    config = RunConfig(platform=platform)
    registry().runner(config.platform_name, Origin(PLATFORM_OPTION) if platform is not None else None)
    return config


# ---------------------------------------------------------------- progress


class SweepProgress:
    """The sweep's progress on standard error as trials finish: a line saying what runs where,
    then a rich bar on a terminal (gone when the sweep ends), else one line per finished trial."""

    def __init__(self, kernel: str, total: int, executor: str) -> None:
        self.kernel = kernel
        self.total = total
        self.executor = executor
        self.done = 0
        self.best: Trial | None = None
        self._bar: Progress | None = None
        self._task: Any = None

    def __enter__(self) -> SweepProgress:
        from rich.console import Console

        click.echo(f"tuning {self.kernel}: {self.total} config(s) on {self.executor}", err=True)
        console = Console(stderr=True)
        if console.is_terminal:
            self._bar = _build_bar(console)
            self._task = self._bar.add_task(f"tuning {self.kernel}", total=self.total, best="")
            self._bar.start()
        return self

    def __call__(self, trial: Trial) -> None:
        """One trial finished (in any order)."""
        self.done += 1
        if trial.feasible and (self.best is None or _better(trial, self.best)):
            self.best = trial
        if self._bar is not None:
            best = "" if self.best is None else f"best so far: {_outcome(self.best)}"
            self._bar.update(self._task, advance=1, best=best)
        else:
            click.echo(f"[{self.done}/{self.total}] {trial.config.label}: {_outcome(trial)}", err=True)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()


def _build_bar(console: Any) -> Progress:
    from rich.progress import TextColumn

    best = TextColumn("{task.fields[best]}", markup=False)
    return build_bar(console, TextColumn("trials"), best, markup=False)


def _better(trial: Trial, best: Trial) -> bool:
    assert trial.objective is not None and best.objective is not None
    return (trial.objective, trial.index) < (best.objective, best.index)


def _outcome(trial: Trial) -> str:
    """``14,240 modeled cycles``, or ``infeasible (MemoryBudgetError)``."""
    if trial.feasible:
        return "-" if trial.cycles is None else f"{trial.cycles:,} modeled cycles"
    kind = trial.message.split(":", 1)[0] if trial.message else trial.status
    return f"{trial.status} ({kind})"


# ---------------------------------------------------------------- the results


def python_value(value: Any) -> str:
    """A config value as Python source: ``pl.SplitMode.UP_DOWN``, ``128``, ``'row'``."""
    if isinstance(value, enum.Enum) and type(value).__module__.startswith("pypto"):
        return f"pl.{type(value).__name__}.{value.name}"
    return repr(value)


def best_line(report: TuningReport) -> str:
    """``best: pl.Config(tile_m=128, split=pl.SplitMode.UP_DOWN)  # 10,308 modeled cycles``."""
    best = report.best
    assert best is not None
    values = ", ".join(f"{name}={python_value(v)}" for name, v in best.config.kwargs.items())
    figures = [] if best.cycles is None else [f"{best.cycles:,} modeled cycles"]
    if report.objective != OBJECTIVE_CYCLES and best.objective is not None:
        figures.append(f"{report.objective} {best.objective:,g}")
    return f"best: pl.Config({values})  # {', '.join(figures)}"


def output_dir(output: Path | None, kernel: str) -> Path:
    """``-o DIR``, else ``pypto_tune/<kernel>``; one that cannot be made is an ArgumentError."""
    directory = output if output is not None else DEFAULT_ROOT / kernel
    origin = Origin("-o/--output") if output is not None else Origin(f"the default, {DEFAULT_ROOT}/{kernel}")
    try:
        check_output_dir(directory, origin, "tuning results", str(DEFAULT_ROOT))
    except ConfigError as err:
        raise ArgumentError(
            err.message,
            hint="point -o/--output at a directory that can be created and written, e.g. -o pypto_tune",
        ) from None
    return directory


def write_results(report: TuningReport, directory: Path) -> list[tuple[str, Path]]:
    """``results.csv`` and ``cycles.png`` in ``directory`` (made if need be)."""
    directory.mkdir(parents=True, exist_ok=True)
    return [
        ("results", report.write_csv(directory / RESULTS_FILE)),
        ("plot", report.plot(directory / PLOT_FILE)),
    ]


# ---------------------------------------------------------------- the command


@click.command(name="tune", cls=PyptoCommand)
@click.argument("target", metavar="SCRIPT::KERNEL")
@click.option(
    "--grid",
    "grids",
    multiple=True,
    metavar="NAME=V1,V2,...",
    help="Values to try for a name the kernel's body reads as a constant (or for a parameter); "
    "repeat per name, the configurations are every combination. A value is an integer, a decimal "
    "number, true/false, a pl enum member (UP_DOWN, SplitMode.UP_DOWN, pl.SplitMode.UP_DOWN) or a word.",
    show_default="the configs of a @pl.autotune kernel",
)
@click.option(
    "--arg",
    "args",
    multiple=True,
    metavar="NAME=VALUE",
    help="A parameter's dtype and shape, DTYPE[D0,D1,...] (a=fp16[256,256]), or a scalar's value "
    "(n=4); repeat per parameter. Tensors get seeded random values, pl.Out ones zeros.",
    show_default="each parameter's annotation",
)
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    metavar="N",
    help="Run the trials on a Dask LocalCluster of N worker processes; 0 or 1: one after another in "
    "this process.",
    show_default="PYPTO_TUNE_WORKERS, else one process per core",
)
@click.option(
    "--scheduler",
    metavar="ADDR",
    help="Run the trials on the Dask cluster whose scheduler is at ADDR (tcp://host:8786).",
    show_default="PYPTO_DASK_SCHEDULER, else a local cluster",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),  # checked up front, with the other ways a directory can fail
    metavar="DIR",
    help="Directory of results.csv and cycles.png.",
    show_default="pypto_tune/<KERNEL>",
)
@click.option(
    "-p",
    "--platform",
    metavar="PLATFORM",
    help="Platform to compile and run the trials on (see `pypto platforms`).",
    show_default="PYPTO_PLATFORM, [tool.pypto] platform, else a2a3sim",
)
def tune(
    target: str,
    grids: tuple[str, ...],
    args: tuple[str, ...],
    workers: int | None,
    scheduler: str | None,
    output: Path | None,
    platform: str | None,
) -> None:
    """Try a kernel's configurations and pick the one with the fewest modeled cycles.

    KERNEL is a top-level @pl.jit or @pl.autotune kernel of SCRIPT (imported: its top level runs,
    its `if __name__ == "__main__":` block is skipped). Its body reads each --grid NAME as a compile-time
    constant (a parameter NAME takes the values as arguments instead); the configurations are the
    product of the --grid options, or an @pl.autotune kernel's configs without --grid. Each one is
    compiled and run on the same arguments; one the compiler or the run rejects is infeasible.
    Prints a table of the trials and the best configuration, writes DIR/results.csv and
    DIR/cycles.png, and keeps the choice in the tuning cache (an @pl.autotune kernel with the same
    configs then runs it without tuning).

    \b
    Examples:
      pypto tune kernels.py::seed --grid tile_m=64,128 --grid slot_num=2,4 \\
        --grid split=UP_DOWN,NONE --arg a=fp16[256,256] --arg b=fp16[256,128] \\
        --arg bias=fp32[256,128] --arg out=fp32[256,128]
      # an @pl.autotune kernel with fully annotated parameters, serially:
      pypto tune kernels.py::tuned_seed --workers 0 -o results
      # on a running Dask cluster:
      pypto tune kernels.py::tuned_seed --scheduler tcp://head:8786
    """
    script, name = split_target(target)
    axes = parse_grid(grids)
    given = parse_args(args)
    run_config = trial_config(platform)
    check_executor_options(workers, scheduler)
    tuner = make_tuner(find_kernel(script, name, tuners=True), axes)
    directory = output_dir(output, tuner.name)
    values = tune_arguments(tuner, given)
    executor = make_sweep_executor(workers, scheduler, len(tuner.configs))
    with SweepProgress(tuner.name, len(tuner.configs), executor.name) as progress:
        report = tuner.tune(config=run_config, executor=executor, on_trial=progress, **values)
    click.echo(report.table())
    click.echo(best_line(report))
    for label, path in write_results(report, directory):
        click.echo(f"  {label:<9}{path}")


COMMANDS = [tune]
