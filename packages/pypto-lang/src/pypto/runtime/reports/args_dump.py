"""The argument dump of a run (``RunConfig(enable_dump_args=1|2)``): its files, written and read.

A run with dumping on writes ``dfx_outputs/args_dump/`` in the program's output directory:

- ``args_dump.bin``: the values, one block of bytes per dumped value, back to back, each the
  tensor's elements in row-major order in its own dtype (native byte order);
- ``args_dump.json``: the index, written when the run ends (also when it fails part way): what the
  file is (``format``, ``version``), the program, the platform, the level, the data file's name,
  and one entry per dumped value, in the order the values were taken: ``index``, ``task_id`` (as
  the report's tasks number them), ``kernel``, ``blocks`` (one dump covers every block of an spmd
  task), ``tensor`` (the orchestration's name for it), ``param`` (the kernel's), ``role``
  (``input`` / ``output`` / ``inout``), ``when`` (``before`` the task ran, or ``after``), ``cycle``
  (the modeled cycle it was taken at), ``shape``, ``dtype`` (``FP32``), ``torch_dtype``
  (``float32``), ``offset`` and ``nbytes`` (its bytes in the data file).

:class:`ArgDumpWriter` is the sink the runtime hands the backend (:mod:`pypto.ir.argdump`): it writes
each value to the data file as it comes, so a full dump never holds more than one tensor in
memory (the disk holds it all: a level-2 dump is the size of every task's arguments together).
:func:`load_args_dump` reads a dump back (``pypto.tools.dump_viewer`` shows it).

>>> entries = load_args_dump("build_output/two_steps_0123abcd")  # doctest: +SKIP
>>> [(e.task_id, e.tensor, e.when) for e in entries]  # doctest: +SKIP
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pypto.ir import PyptoError
from pypto.ir.argdump import AFTER, BEFORE, DumpedArg
from pypto.ir.dtypes import dtype_from_torch_name

ARGS_DUMP_DIR = "dfx_outputs/args_dump"  # in the program's output directory
INDEX_FILE, DATA_FILE = "args_dump.json", "args_dump.bin"
FORMAT, VERSION = "pypto-args-dump", 1
ROLES = ("input", "output", "inout")
HINT = (
    "give the directory a run with RunConfig(enable_dump_args=1 or 2) wrote: its output directory, "
    "or the dfx_outputs/args_dump/ in it (the run's report.args_dump says where)"
)


class ArgsDumpError(PyptoError, ValueError):
    """A directory or file given as an argument dump that is not one, or is damaged."""


class ArgDumpWriter:
    """The runtime's :class:`pypto.ir.argdump.ArgDumpSink`: writes each dumped value to
    ``<directory>/args_dump.bin`` at once, and the index when :meth:`close` d.

    >>> writer = ArgDumpWriter(Path("out/dfx_outputs/args_dump"), 1, "two_steps", "a2a3sim")  # doctest: +SKIP
    """

    def __init__(self, directory: Path, level: int, program: str, platform: str) -> None:
        self.directory = Path(directory)
        self.level = level
        self.program, self.platform = program, platform
        self.entries: list[dict[str, Any]] = []
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / INDEX_FILE).unlink(missing_ok=True)  # a dump of an earlier run is gone
        self._data: IO[bytes] | None = open(self.directory / DATA_FILE, "wb")  # noqa: SIM115 (closed by close)
        self._offset = 0

    def dump(self, arg: DumpedArg, tensor: Any) -> None:
        """Append ``tensor``'s values as they are now, and its entry in the index."""
        import torch  # a run has it; compiling does not need it

        assert self._data is not None, "dump after close"
        flat = tensor.detach().contiguous().reshape(-1)
        data = flat.view(torch.uint8).numpy() if flat.numel() else b""
        self._data.write(data)
        nbytes = flat.numel() * flat.element_size()
        torch_dtype = str(tensor.dtype).removeprefix("torch.")
        known = dtype_from_torch_name(torch_dtype)
        self.entries.append(
            {
                "index": len(self.entries),
                "task_id": arg.task_id,
                "kernel": arg.kernel,
                "blocks": arg.blocks,
                "tensor": arg.slot.tensor,
                "param": arg.slot.param,
                "role": arg.slot.role.value,
                "when": arg.when,
                "cycle": arg.cycle,
                "shape": list(tensor.shape),
                "dtype": known.name if known is not None else torch_dtype,
                "torch_dtype": torch_dtype,
                "offset": self._offset,
                "nbytes": nbytes,
            }
        )
        self._offset += nbytes

    def close(self) -> Path:
        """Close the data file and write the index; returns the directory."""
        if self._data is not None:
            self._data.close()
            self._data = None
        index = {
            "format": FORMAT,
            "version": VERSION,
            "program": self.program,
            "platform": self.platform,
            "level": self.level,
            "data_file": DATA_FILE,
            "entries": self.entries,
        }
        path = self.directory / INDEX_FILE
        partial = path.with_suffix(".json.part")
        partial.write_text(json.dumps(index, indent=1) + "\n")
        os.replace(partial, path)
        return self.directory


@dataclass
class DumpEntry:
    """One dumped value: which task, which tensor, in what role, taken ``before`` or ``after`` the
    task; ``tensor`` reads its values (a torch tensor) from the data file when first asked."""

    index: int
    task_id: int
    kernel: str
    blocks: int
    tensor_name: str
    param: str
    role: str
    when: str
    cycle: int
    shape: tuple[int, ...]
    dtype: str
    torch_dtype: str
    offset: int
    nbytes: int
    data_file: Path = field(repr=False)

    @functools.cached_property
    def tensor(self) -> Any:
        """The values as a torch tensor of ``shape`` and ``torch_dtype``."""
        import torch

        with open(self.data_file, "rb") as f:
            f.seek(self.offset)
            raw = f.read(self.nbytes)
        if len(raw) != self.nbytes:
            raise ArgsDumpError(
                f"{self.data_file} ends before entry {self.index} ({self.tensor_name} of task "
                f"{self.task_id}): {len(raw)} of its {self.nbytes} bytes are there",
                hint="the data file was cut short (the disk filled up, or it was copied in part): run again",
            )
        dtype = getattr(torch, self.torch_dtype)
        flat = (
            torch.frombuffer(bytearray(raw), dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
        )
        return flat.view(dtype).reshape(self.shape)

    @property
    def label(self) -> str:
        """``task 2 shift: out (output, after)``."""
        return f"task {self.task_id} {self.kernel}: {self.tensor_name} ({self.role}, {self.when})"


@dataclass(frozen=True)
class ArgsDump:
    """A dump read back: the run's program, platform and level, and its entries in the order taken."""

    directory: Path
    program: str | None
    platform: str | None
    level: int
    entries: tuple[DumpEntry, ...]


def find_args_dump(path: str | os.PathLike[str]) -> Path:
    """The ``args_dump/`` directory ``path`` names: itself, its ``args_dump.json``, or the
    ``dfx_outputs/`` or output directory holding it."""
    given = Path(path)
    candidates = (
        [given.parent] if given.name == INDEX_FILE else [given, given / "args_dump", given / ARGS_DUMP_DIR]
    )
    for candidate in candidates:
        if (candidate / INDEX_FILE).is_file():
            return candidate
    if not given.exists():
        raise ArgsDumpError(f"{given} does not exist", hint=HINT)
    raise ArgsDumpError(
        f"{given} holds no argument dump (no {INDEX_FILE} in it or in {ARGS_DUMP_DIR}/)", hint=HINT
    )


def read_args_dump(path: str | os.PathLike[str]) -> ArgsDump:
    """The dump at ``path`` (see :func:`find_args_dump`), its index checked; values read on demand."""
    directory = find_args_dump(path)
    index_path = directory / INDEX_FILE
    try:
        index = json.loads(index_path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ArgsDumpError(f"{index_path} cannot be read as JSON: {err}", hint=HINT) from None
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise ArgsDumpError(
            f"{index_path} is not a PyPTO argument dump index (no format {FORMAT!r})", hint=HINT
        )
    if index.get("version") != VERSION:
        raise ArgsDumpError(
            f"{index_path} is version {index.get('version')!r} of the dump format; "
            f"this reader reads version {VERSION}",
            hint="read it with the PyPTO that wrote it, or run again",
        )
    data_file = directory / str(index.get("data_file", DATA_FILE))
    if not data_file.is_file():
        raise ArgsDumpError(f"{data_file} is missing: the index names it as its data file", hint=HINT)
    raw_entries = index.get("entries")
    if not isinstance(raw_entries, list):
        raise ArgsDumpError(f"{index_path} has no list of entries", hint=HINT)
    entries = tuple(_entry(raw, k, index_path, data_file) for k, raw in enumerate(raw_entries))
    return ArgsDump(
        directory, index.get("program"), index.get("platform"), int(index.get("level", 0)), entries
    )


def load_args_dump(path: str | os.PathLike[str]) -> list[DumpEntry]:
    """The entries of the dump at ``path``, in the order their values were taken."""
    return list(read_args_dump(path).entries)


def _entry(raw: Any, position: int, index_path: Path, data_file: Path) -> DumpEntry:
    try:
        entry = DumpEntry(
            index=int(raw["index"]),
            task_id=int(raw["task_id"]),
            kernel=str(raw["kernel"]),
            blocks=int(raw["blocks"]),
            tensor_name=str(raw["tensor"]),
            param=str(raw["param"]),
            role=str(raw["role"]),
            when=str(raw["when"]),
            cycle=int(raw["cycle"]),
            shape=tuple(int(n) for n in raw["shape"]),
            dtype=str(raw["dtype"]),
            torch_dtype=str(raw["torch_dtype"]),
            offset=int(raw["offset"]),
            nbytes=int(raw["nbytes"]),
            data_file=data_file,
        )
    except (KeyError, TypeError, ValueError) as err:
        raise ArgsDumpError(
            f"{index_path}: entry {position} is damaged ({type(err).__name__}: {err})", hint=HINT
        ) from None
    if entry.role not in ROLES or entry.when not in (BEFORE, AFTER) or entry.offset < 0 or entry.nbytes < 0:
        raise ArgsDumpError(
            f"{index_path}: entry {position} is damaged (role {entry.role!r}, when {entry.when!r}, "
            f"offset {entry.offset}, nbytes {entry.nbytes})",
            hint=HINT,
        )
    return entry


__all__ = [
    "ARGS_DUMP_DIR",
    "ArgDumpWriter",
    "ArgsDump",
    "ArgsDumpError",
    "DumpEntry",
    "find_args_dump",
    "load_args_dump",
    "read_args_dump",
]
