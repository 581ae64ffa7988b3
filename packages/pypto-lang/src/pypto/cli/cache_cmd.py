"""``pypto cache info`` and ``pypto cache clear``: the disk cache of compiled programs."""

from __future__ import annotations

import time

import click

from pypto.cli.views import table
from pypto.runtime import settings
from pypto.runtime.compiling.cache import EntryInfo, ProgramCache
from pypto.tuning.sweep import TuningCache


def _size(nbytes: int) -> str:
    return f"{nbytes / 1024:.1f} KiB" if nbytes >= 1024 else f"{nbytes} B"


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f} ms"


def _age(created: float) -> str:
    minutes = max(0.0, time.time() - created) / 60
    return f"{minutes:.0f} min" if minutes < 120 else f"{minutes / 60:.0f} h"


def _row(entry: EntryInfo) -> list[str]:
    return [
        entry.kernel,
        entry.platform,
        _ms(entry.compile_seconds),
        str(entry.hits),
        _ms(entry.last_hit_seconds),
        _size(entry.size),
        _age(entry.created),
    ]


@click.group()
def cache() -> None:
    """Inspect or empty the compile cache.

    The cache lives in PYPTO_CACHE_DIR, else [tool.pypto] cache-dir, else the user cache
    directory (~/.cache/pypto on Linux). PYPTO_CACHE=off (or cache = false) turns it off.

    \b
    Examples:
      pypto cache info
      pypto cache clear
    """


@cache.command()
def info() -> None:
    """Show the cache's directory and its entries.

    A hit's time is what compiling cost when the cache had the program: making the key and
    reading the entry. An entry whose index (the .json beside it) is missing or corrupt is not
    listed but named in a warning; a hit on it writes the index again.

    \b
    Example:
      pypto cache info
    """
    store = ProgramCache(settings.cache_dir())
    entries = store.entries()  # an entry without a readable index is a CacheWarning
    hits = sum(entry.hits for entry in entries)
    size = sum(entry.size for entry in entries)
    click.echo(f"directory: {store.directory}")
    click.echo(
        f"enabled:   {'yes' if settings.cache_enabled() else 'no (PYPTO_CACHE or [tool.pypto] cache)'}"
    )
    click.echo(f"entries:   {len(entries)} ({_size(size)}), {hits} hit(s)")
    if entries:
        header = ["KERNEL", "PLATFORM", "COMPILE", "HITS", "LAST HIT", "SIZE", "AGE"]
        click.echo("\n" + "\n".join(table([header, *(_row(entry) for entry in entries)])))
    choices = TuningCache(settings.cache_dir()).entries()
    if choices:  # what @pl.autotune and pypto tune chose (docs/tuning.md)
        click.echo(f"\ntuning choices: {len(choices)}")
        rows = [[kernel, str(trials), best] for kernel, trials, best in choices]
        click.echo("\n".join(table([["KERNEL", "TRIALS", "BEST CONFIG"], *rows])))


@cache.command()
def clear() -> None:
    """Remove every entry from the cache, and the tuning choices kept beside them.

    \b
    Example:
      pypto cache clear
    """
    store = ProgramCache(settings.cache_dir())
    click.echo(f"removed {store.clear()} entries from {store.directory}")
    tuning = TuningCache(settings.cache_dir())
    removed = tuning.clear()
    if removed:
        click.echo(f"removed {removed} tuning choice(s) from {tuning.directory}")


COMMANDS = [cache]
