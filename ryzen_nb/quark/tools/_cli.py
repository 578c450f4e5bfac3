"""What every tool shares: Quark's flags for the input and output (each tool's own spelling, and
the one its documentation uses where the two differ), errors as one line instead of a traceback,
and the exit codes (0 done, 2 an error)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from ryzen_nb.errors import RyzenNBError

__all__ = ["parser", "add_path", "run", "unavailable"]


def parser(tool: str, description: str) -> argparse.ArgumentParser:
    return argparse.ArgumentParser(prog=f"python -m ryzen_nb.quark.tools.{tool}", description=description)


def add_path(p: argparse.ArgumentParser, dest: str, flags: Sequence[str], what: str) -> None:
    """``dest`` given either as a positional argument or as one of ``flags`` (Quark's tools and
    their documentation do not always agree on which)."""
    p.add_argument(f"{dest}_positional", nargs="?", metavar=dest.upper(), help=f"{what} (or {flags[0]})")
    p.add_argument(*flags, dest=dest, help=what)


def _resolve(p: argparse.ArgumentParser, args: argparse.Namespace, dest: str) -> None:
    value = getattr(args, dest, None) or getattr(args, f"{dest}_positional", None)
    if not value:
        p.error(f"give the {dest.replace('_', ' ')}")
    setattr(args, dest, value)


def run(p: argparse.ArgumentParser, action: Callable[[argparse.Namespace], None], argv: Sequence[str] | None,
        paths: Sequence[str] = ()) -> int:
    """Parse ``argv``, fill the ``paths`` given positionally or by flag, run ``action``."""
    args = p.parse_args(argv)
    for dest in paths:
        _resolve(p, args, dest)
    try:
        action(args)
    except RyzenNBError as exc:
        print(f"{p.prog}: error: {exc}", file=sys.stderr)
        return 2
    return 0


def unavailable(tool: str, reason: str, argv: Sequence[str] | None) -> int:
    """A documented Quark tool ryzen-nb has no counterpart of: one line saying why, exit code 2."""
    p = parser(tool, reason)
    p.parse_known_args(argv)  # --help still works
    print(f"{p.prog}: {reason}", file=sys.stderr)
    return 2
