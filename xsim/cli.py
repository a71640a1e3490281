"""``xsim``: the command line. Thin: parse, load, call the library, render.

Every command lives in ``xsim.commands.<name>`` with ``add_parser(subparsers)`` and
``run(args) -> int``. Bad input is one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from importlib import import_module

COMMANDS = ("model", "simulate", "sweep", "calibrate", "bench", "report", "platforms", "scenarios")


class UsageError(Exception):
    """Bad input from the user: reported as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2 (argparse prints usage too)
        raise UsageError(f"{self.prog}: {message}")


def _expected_errors() -> tuple[type[BaseException], ...]:
    from xsim.budget import BudgetError
    from xsim.fileio import OutputError
    from xsim.params import ParamError
    from xsim.platform import ProfileError
    from xsim.scenario import ScenarioError
    from xsim.units import UnitError

    errors: list[type[BaseException]] = [UsageError, ProfileError, ScenarioError, ParamError, UnitError,
                                         BudgetError, OutputError]
    try:
        from xsim.des.simpy_engine import SimulationError
        errors.append(SimulationError)
    except ImportError:  # SimPy missing: nothing to catch from it
        pass
    try:
        from calibration.records import RecordError
        errors.append(RecordError)
    except ImportError:
        pass
    return tuple(errors)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="xsim", description="Model, simulate and measure the X-Stage of GPU remote stores.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name in COMMANDS:
        try:
            module = import_module(f"xsim.commands.{name.replace('-', '_')}")
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("xsim.commands"):
                continue  # a command not built yet
            raise
        command = module.add_parser(sub)
        command.set_defaults(run=module.run)
    return parser


def _one_line(message: str) -> str:
    return " ".join(message.split())


def main(argv: list[str] | None = None) -> int:
    from xsim.fileio import forget_inputs

    forget_inputs()  # the files this command reads are the ones it must not write over
    previous = _sigterm_interrupts()
    try:
        args = build_parser().parse_args(argv)
        return args.run(args)
    except _expected_errors() as exc:
        print(f"xsim: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except MemoryError:
        print("xsim: error: out of memory (the estimate before the run was too low; please report it)",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("xsim: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def _sigterm_interrupts():
    """SIGTERM stops a command as Ctrl-C does (temporary files removed, workers stopped)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _raise_interrupt)


if __name__ == "__main__":
    sys.exit(main())
