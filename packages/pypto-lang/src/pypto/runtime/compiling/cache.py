"""The disk cache of compiled programs: lowered ``Program`` objects, pickled, one file per key.

The key is a SHA-256 over the parsed program (what the source says once parsed: every op,
type, closure constant and specialized shape, and every source position), the platform and
its target description, the pipeline, the options, the versions of the compiler packages, the
plugin that provides the platform, and a hash of the compiler's own source files. Only IR is
stored, never backend state. Writes are atomic (a temporary file renamed into place); an entry
that cannot be read is dropped with a :class:`CacheWarning` and compiled again.

``PYPTO_CACHE_DIR`` (or ``[tool.pypto] cache-dir``) moves the cache; ``PYPTO_CACHE=off`` (or
``cache = false``) turns it off.

>>> lowered, status = cached_lower(program, target, config, lambda: lower_program(...))  # doctest: +SKIP
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import pickle
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from pypto.ir import Program, Target, VerificationLevel, log
from pypto.ir.nodes import FunctionMap
from pypto.runtime import settings
from pypto.runtime.compiling.pipelines import pipeline_of
from pypto.runtime.config import RunConfig

FORMAT = 1  # bump when CacheEntry changes shape
ENTRIES = "compiled"  # the sub-directory of the cache directory that holds the entries
PROGRAM_SUFFIX = ".pickle"
META_SUFFIX = ".json"
COMPILER_PACKAGES = ("pypto.ir", "pypto.passes", "pypto.language", "pypto.runtime")
VERSIONED_DISTRIBUTIONS = ("pypto-ir", "pypto-passes", "pypto-lang")


class CacheWarning(UserWarning):
    """The compile cache could not read or write an entry; compilation went on without it."""


class Uncacheable(TypeError):
    """A value in the program, the options or the target has no stable fingerprint."""


# ---------------------------------------------------------------- the key


class _Fingerprint:
    """A SHA-256 over a value built of IR dataclasses, enums, containers and plain values.

    A dataclass instance met again is written as a back-reference, so two distinct ``Var``
    objects of one name hash differently from one ``Var`` used twice.
    """

    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.seen: dict[int, int] = {}

    def add(self, value: Any) -> _Fingerprint:
        self.digest.update(self._token(value).encode())
        return self

    def _token(self, value: Any) -> str:
        if value is None or isinstance(value, (bool, int, float, str, bytes)):
            return f"{type(value).__name__}:{value!r};"
        if isinstance(value, Enum):
            return f"enum:{type(value).__qualname__}.{value.name};"
        if isinstance(value, type):
            return f"class:{value.__module__}.{value.__qualname__};"
        if dataclasses.is_dataclass(value):
            return self._dataclass(value)
        if isinstance(value, (tuple, list)):
            return "(" + "".join(self._token(item) for item in value) + ")"
        if isinstance(value, FunctionMap):  # ordered: the program order is part of the program
            return "functions" + self._token(tuple(value.values()))
        if isinstance(value, Mapping):
            items = sorted((self._detached(k), k) for k in value)
            return "{" + "".join(f"{token}={self._token(value[k])}" for token, k in items) + "}"
        if isinstance(value, (set, frozenset)):
            return "set(" + ",".join(sorted(self._detached(item) for item in value)) + ")"
        raise Uncacheable(f"no fingerprint for a {type(value).__qualname__}")

    def _dataclass(self, value: Any) -> str:
        if id(value) in self.seen:
            return f"ref:{self.seen[id(value)]};"
        self.seen[id(value)] = len(self.seen)
        fields = "".join(f"{f.name}={self._token(getattr(value, f.name))}" for f in dataclasses.fields(value))
        return f"{type(value).__module__}.{type(value).__qualname__}[{fields}]"

    @staticmethod
    def _detached(value: Any) -> str:
        """The fingerprint of a set element or mapping key on its own, for a stable order."""
        return _Fingerprint().add(value).digest.hexdigest()


@functools.cache
def compiler_digest() -> str:
    """A hash of the source files of the parser, the IR, the passes and the runtime."""
    digest = hashlib.sha256()
    for package in COMPILER_PACKAGES:
        spec = importlib.util.find_spec(package)
        roots = spec.submodule_search_locations if spec is not None else None
        _add_sources(digest, package, [Path(root) for root in roots or []])
    return digest.hexdigest()


@functools.cache
def source_digest(module: str) -> str:
    """A hash of the source files of the top-level package that ``module`` (imported) belongs to,
    or of its file when it is a top-level module; e.g. of the plugin whose backend's cost model
    times a tuning sweep's trials, whose version alone misses an edit of an editable install."""
    top = module.partition(".")[0]
    loaded = sys.modules.get(top)
    roots = getattr(loaded, "__path__", None)
    file = getattr(loaded, "__file__", None)
    digest = hashlib.sha256(top.encode())
    if roots:
        _add_sources(digest, top, [Path(root) for root in roots])
    elif file:
        _add_sources(digest, top, [Path(file).parent], [Path(file)])
    return digest.hexdigest()


def _add_sources(digest: Any, package: str, roots: list[Path], files: list[Path] | None = None) -> None:
    for root in sorted(roots):
        for path in files if files is not None else sorted(root.rglob("*.py")):
            digest.update(f"{package}/{path.relative_to(root).as_posix()}\0".encode())
            with suppress(OSError):  # a dangling link, say: its name still counts
                digest.update(path.read_bytes())


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def cache_key(program: Program, target: Target, config: RunConfig, provider: str) -> str:
    """The key of ``program`` compiled for ``target`` under ``config``; ``provider`` names the
    plugin (and its distribution and version) that registered the platform.

    Raises :class:`Uncacheable` when some option or attribute has no stable fingerprint.
    """
    fingerprint = _Fingerprint()
    fingerprint.add(("format", FORMAT, "compiler", compiler_digest()))
    fingerprint.add(tuple((d, _version(d)) for d in VERSIONED_DISTRIBUTIONS))
    fingerprint.add((config.platform, provider, target))
    # The passes that run, with their options and their plugins: an empty pipeline (parse only)
    # is not the default one, and a backend's own pipeline is not either.
    fingerprint.add((pipeline_of(config).key(), dict(config.options)))
    if config.lowering_options():  # the memory planner, silenced checks (defaults add nothing)
        fingerprint.add(config.lowering_options())
    return fingerprint.add(program).digest.hexdigest()


# ---------------------------------------------------------------- entries


@dataclass(frozen=True)
class RecordedWarning:
    """A warning the compiler gave while lowering, replayed when the entry is used."""

    category: type[Warning]
    message: str
    filename: str
    lineno: int

    def replay(self) -> None:
        warnings.warn_explicit(self.message, self.category, self.filename, self.lineno)


@dataclass(frozen=True)
class CacheEntry:
    """What one cache file holds: the lowered program and the warnings lowering gave."""

    program: Program
    warnings: tuple[RecordedWarning, ...] = ()


@dataclass(frozen=True)
class EntryInfo:
    """What ``pypto cache info`` shows of one entry (read from its index, the ``.json`` beside it).
    ``compile_seconds`` is None when a hit rebuilt a lost index."""

    key: str
    kernel: str
    platform: str
    size: int
    compile_seconds: float | None
    created: float
    hits: int
    last_hit_seconds: float | None


# The fields of an entry's index and the types each may hold.
_NUMBER = (int, float)
INDEX_FIELDS: dict[str, tuple[type, ...]] = {
    "kernel": (str,),
    "platform": (str,),
    "compile_seconds": (*_NUMBER, type(None)),
    "created": _NUMBER,
    "hits": (int,),
    "last_hit_seconds": (*_NUMBER, type(None)),
}


def _index_problem(meta: Any) -> str | None:
    """What is wrong with a decoded index, or None when every field is there with its type."""
    if not isinstance(meta, dict):
        return f"holds a {type(meta).__name__}, not an object"
    for name, kinds in INDEX_FIELDS.items():
        if name not in meta:
            return f"has no {name!r}"
        if not isinstance(meta[name], kinds) or isinstance(meta[name], bool):
            return f"has {name} = {meta[name]!r}"
    return None


class ProgramCache:
    """The entries under ``directory``: ``compiled/<key>.pickle`` and ``compiled/<key>.json``.

    >>> cache = ProgramCache(settings.cache_dir())  # doctest: +SKIP
    >>> [entry.kernel for entry in cache.entries()]  # doctest: +SKIP
    """

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.entries_dir = self.directory / ENTRIES

    def _program_path(self, key: str) -> Path:
        return self.entries_dir / f"{key}{PROGRAM_SUFFIX}"

    def _meta_path(self, key: str) -> Path:
        return self.entries_dir / f"{key}{META_SUFFIX}"

    def load(self, key: str) -> CacheEntry | None:
        """The entry of ``key``; None when there is none or it is unreadable (then it is removed)."""
        path = self._program_path(key)
        try:
            data = path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            warnings.warn(f"cannot read compile cache entry {path}: {exc}", CacheWarning, stacklevel=2)
            return None
        try:
            entry = pickle.loads(data)
            if not isinstance(entry, CacheEntry) or not isinstance(entry.program, Program):
                raise TypeError(f"it holds a {type(entry).__name__}, not a CacheEntry")
        except Exception as exc:  # any unpickling failure means the same: the entry is unusable
            warnings.warn(
                f"compile cache entry {path} is corrupted ({type(exc).__name__}: {exc}); compiling again",
                CacheWarning,
                stacklevel=2,
            )
            self._remove(key)
            return None
        return entry

    def store(self, key: str, entry: CacheEntry, kernel: str, platform: str, compile_seconds: float) -> None:
        """Write ``entry`` and its metadata atomically; a failure is a warning, not an error."""
        try:
            data = pickle.dumps(entry, protocol=pickle.HIGHEST_PROTOCOL)
            meta = {
                "kernel": kernel,
                "platform": platform,
                "compile_seconds": compile_seconds,
                "created": time.time(),
                "hits": 0,
                "last_hit_seconds": None,
            }
            self._write(self._program_path(key), data)
            self._write(self._meta_path(key), json.dumps(meta).encode())
        except (OSError, pickle.PicklingError, TypeError, AttributeError) as exc:
            warnings.warn(f"cannot write compile cache entry {key}: {exc}", CacheWarning, stacklevel=2)

    def record_hit(self, key: str, seconds: float, kernel: str, platform: str) -> None:
        """Count a use of ``key`` (a program of ``kernel`` for ``platform``) that took ``seconds``
        (key, read and unpickle). An index that is lost or unreadable is written anew."""
        path = self._meta_path(key)
        meta, _ = self._read_meta(path)
        if meta is None:  # lost or unreadable: start it again from what this hit knows
            meta = {"kernel": kernel, "platform": platform, "compile_seconds": None, "created": time.time()}
        meta["hits"] = int(meta.get("hits", 0)) + 1
        meta["last_hit_seconds"] = seconds
        with suppress(OSError):
            self._write(path, json.dumps(meta).encode())

    def entries(self) -> list[EntryInfo]:
        """Every entry whose index can be read, oldest first. Each other entry is a
        :class:`CacheWarning` that names its index and what is wrong with it."""
        infos = []
        for path in self._program_files():
            info = self._info(path)
            if isinstance(info, EntryInfo):
                infos.append(info)
            else:
                warnings.warn(
                    f"compile cache entry {path} is not listed: its index {info}; a hit on it writes "
                    "the index again, and `pypto cache clear` removes it",
                    CacheWarning,
                    stacklevel=2,
                )
        return sorted(infos, key=lambda info: info.created)

    def clear(self) -> int:
        """Remove every entry; returns how many there were."""
        paths = self._program_files()
        for path in paths:
            self._remove(path.name.removesuffix(PROGRAM_SUFFIX))
        return len(paths)

    def _program_files(self) -> list[Path]:
        if not self.entries_dir.is_dir():
            return []
        return sorted(self.entries_dir.glob(f"*{PROGRAM_SUFFIX}"))

    def _info(self, path: Path) -> EntryInfo | str:
        """The entry of the program file ``path``, or what is wrong with its index."""
        key = path.name.removesuffix(PROGRAM_SUFFIX)
        meta, problem = self._read_meta(self._meta_path(key))
        if meta is None:
            return f"{self._meta_path(key)} {problem}"
        return EntryInfo(
            key=key,
            kernel=meta["kernel"],
            platform=meta["platform"],
            size=path.stat().st_size,
            compile_seconds=meta["compile_seconds"],
            created=float(meta["created"]),
            hits=meta["hits"],
            last_hit_seconds=meta["last_hit_seconds"],
        )

    @staticmethod
    def _read_meta(path: Path) -> tuple[dict[str, Any] | None, str | None]:
        """The index at ``path``, or None and what is wrong with it."""
        try:
            meta = json.loads(path.read_text())
        except FileNotFoundError:
            return None, "is missing"
        except OSError as exc:
            return None, f"cannot be read ({exc.strerror or exc})"
        except ValueError as exc:
            return None, f"is not valid JSON ({exc})"
        problem = _index_problem(meta)
        return (None, problem) if problem else (meta, None)

    def _remove(self, key: str) -> None:
        for path in (self._program_path(key), self._meta_path(key)):
            with suppress(FileNotFoundError):
                path.unlink()

    def _write(self, path: Path, data: bytes) -> None:
        """Write ``data`` to ``path`` so that a reader sees the old file or the new one, never half."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temporary, path)
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(temporary)
            raise


# ---------------------------------------------------------------- lowering through the cache

HIT, MISS, OFF = "hit", "miss", "off"
KEY_SHOWN = 12  # characters of a key a log line shows


@contextmanager
def _recording_warnings() -> Iterator[list[RecordedWarning]]:
    """Record the warnings given inside the block, then give them again to the caller's filters."""
    recorded: list[RecordedWarning] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield recorded
    finally:
        recorded.extend(RecordedWarning(w.category, str(w.message), w.filename, w.lineno) for w in caught)
        for warning in recorded:
            warning.replay()


def cached_lower(
    program: Program, target: Target, config: RunConfig, provider: str, lower: Callable[[], Program]
) -> tuple[Program, str]:
    """``lower()``'s result for ``program``, from the disk cache when it holds it.

    Returns the lowered program and ``"hit"``, ``"miss"`` (compiled and stored) or ``"off"``
    (the cache is switched off, pass dumps, ``VerificationLevel.ROUNDTRIP`` or a compile profile
    are asked for, or the key cannot be made).
    """
    # A dump, a round-trip check or a profile is asked for each compile: a hit would skip the passes.
    checked = config.verification_level is VerificationLevel.ROUNDTRIP or config.compile_profiling
    if not settings.cache_enabled() or config.dump_dir(program.name) is not None or checked:
        log.debug(f"compile cache not used for {program.name}: it is off, or dumps or checks are asked for")
        return lower(), OFF
    start = time.perf_counter()
    try:
        key = cache_key(program, target, config, provider)
    except Uncacheable:
        return lower(), OFF
    cache = ProgramCache(settings.cache_dir())
    entry = cache.load(key)
    if entry is not None:
        for warning in entry.warnings:
            warning.replay()
        cache.record_hit(key, time.perf_counter() - start, program.name, config.platform_name)
        log.debug(f"compile cache hit: {program.name} ({key[:KEY_SHOWN]}) from {cache.directory}")
        return entry.program, HIT
    log.debug(f"compile cache miss: {program.name} ({key[:KEY_SHOWN]}), compiling")
    with _recording_warnings() as recorded:
        lowered = lower()
    entry = CacheEntry(lowered, tuple(recorded))
    cache.store(key, entry, program.name, config.platform_name, time.perf_counter() - start)
    return lowered, MISS


__all__ = [
    "CacheEntry",
    "CacheWarning",
    "EntryInfo",
    "ProgramCache",
    "RecordedWarning",
    "Uncacheable",
    "cache_key",
    "cached_lower",
    "compiler_digest",
]
