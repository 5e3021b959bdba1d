"""The ``eval-harness`` entry point: registers the commands and turns user errors into one line + exit code."""

from __future__ import annotations

import codecs
import contextlib
import functools
import importlib
import os
import pkgutil
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import typer

from eval_harness.cli import EXIT_BAD_INPUT, EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, visible
from eval_harness.cli.launch import resume_collection
from eval_harness.cli.stream_guard import begin_command, guard_streams, reader_gone
from eval_harness.errors import ConfigError, DatasetError, EvalHarnessError

_SETTINGS: dict[str, Any] = {
    "name": "eval-harness",
    "no_args_is_help": True,
    "add_completion": False,
    "pretty_exceptions_enable": False,
    "rich_markup_mode": None,
}
app = typer.Typer(
    help="Async, crash-safe LLM evaluations that report capability profiles with confidence intervals.",
    **_SETTINGS,
)


def _register_commands() -> None:
    """Every module of this package with a ``register(app)`` adds its commands: a new command is one file."""
    package = Path(__file__).parent
    for module_info in sorted(pkgutil.iter_modules([str(package)]), key=lambda m: m.name):
        if module_info.name in ("app", "launch", "render") or module_info.ispkg:
            continue
        module = importlib.import_module(f"eval_harness.cli.{module_info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(app)
    _collect_in_commands(app)


def _collect_in_commands(group: typer.Typer) -> None:
    for command in group.registered_commands:
        assert command.callback is not None
        command.callback = _collecting(command.callback)
    for subgroup in group.registered_groups:
        assert subgroup.typer_instance is not None
        _collect_in_commands(subgroup.typer_instance)


def _collecting(callback: Callable[..., Any]) -> Callable[..., Any]:
    """The command, ending start-up's pause of the garbage collector as it begins (see ``launch``)."""

    @functools.wraps(callback)  # typer reads the parameters through __wrapped__
    def command(*args: Any, **kwargs: Any) -> Any:
        resume_collection()
        return callback(*args, **kwargs)

    return command


_register_commands()


def _app_for(args: list[str]) -> typer.Typer:
    """The app that parses ``args``: when they name a command, an app holding only that command.

    Typer builds the click command of every registered command (evaluating each one's annotations) before it
    parses anything: ~30 ms of every start for ten commands that are not run. The help of the app, a
    misspelt command (typer suggests the near names) and no command at all go to the whole app.
    """
    name = args[0] if args else ""
    commands = [command for command in app.registered_commands if command.name == name]
    groups = [group for group in app.registered_groups if group.name == name]
    if not commands and not groups:
        return app
    alone = typer.Typer(**_SETTINGS)
    alone.registered_commands = commands
    alone.registered_groups = groups
    alone.callback()(_no_options)  # a callback keeps it a group: the command is still named on the line
    return alone


def _no_options() -> None:
    pass


_KEY_VALUE = re.compile(r"[A-Za-z_][\w.]*=")


def _refuse_repeated_options(command: Any, args: list[str]) -> None:
    """An option that takes one value, given twice, is refused: click keeps the last one, so a second
    ``--dataset`` (two MMLU subjects, say) would silently replace the first; so is an on/off pair given twice."""
    commands: dict[str, Any] = getattr(command, "commands", {})
    path = ["eval-harness"]
    while args and args[0] in commands:  # down to the (sub)command the arguments are for
        path.append(args[0])
        command, args = commands[args[0]], args[1:]
        commands = getattr(command, "commands", {})
    options = {
        name: param
        for param in command.params
        if param.param_type_name == "option"
        for name in (*param.opts, *param.secondary_opts)
    }
    given: dict[str, list[str]] = {}
    index = 0
    # a command with a positional argument (resume RUN_DIR) may take a path that looks like KEY=VALUE
    arguments = [param for param in command.params if param.param_type_name == "argument"]
    positional = bool(arguments)
    path_arguments = [param for param in arguments if _takes_a_path(param)]
    repeatable: tuple[str, str] | None = None  # the repeatable KEY=VALUE option just read, and its value
    fixed: list[str] = []  # options the command does not take: for resume, maybe a new run's
    while index < len(args) and args[index] != "--":
        token = args[index]
        name, equals, attached = token.partition("=") if token.startswith("--") else (token, "", "")
        option = options.get(name)
        index += 1
        if option is None:
            if not token and path_arguments:
                # resume "$RUN" with RUN unset: "" is the working directory, which may be a run, resumed unasked
                argument = str(path_arguments[0].name).upper()  # RUN_DIR, as the usage line names it
                raise ConfigError(f"{argument} is given an empty path; give one ('.' for the working directory)")
            fixed.append(name)
            # "--model-arg a=1 b=2": click says only "unexpected extra argument", which does not say what to do
            if repeatable is not None and not positional and _KEY_VALUE.match(token):
                flag, value = repeatable
                raise ConfigError(f"{token}: each KEY=VALUE needs its own {flag}: {flag} {value} {flag} {token}")
            repeatable = None
            continue
        repeatable = None
        if not option.is_flag and not equals:
            if index == len(args):
                _refuse_missing_value(command, " ".join(path), name)
            if option.multiple and index < len(args):
                repeatable = (name, args[index])
            attached = args[index]
            index += 1  # its value, whatever it looks like
        if not option.is_flag and not attached and _takes_a_path(option):
            # an unset shell variable ("--dataset $DS"): read as a path, "" is the working directory, silently
            raise ConfigError(f"{name} is given an empty path; give one ('.' for the working directory)")
        # an on/off pair (--cache/--no-cache) is one setting too: "--cache --no-cache" left the last one standing
        if (option.secondary_opts or not option.is_flag) and not (option.multiple or option.count):
            given.setdefault(option.name, []).append(name)
    _refuse_options_fixed_by_the_run(path, fixed)
    for option_name, names in given.items():
        if len(names) > 1:
            spelt = "/".join(dict.fromkeys(names))  # "-t/--task" when both spellings were used
            pair = next(o for o in options.values() if o.name == option_name).is_flag
            what = "it is one on/off setting (give one of them once)" if pair else "it takes one value (give it once)"
            raise ConfigError(f"{spelt} given {len(names)} times; {what}")


def _takes_a_path(option: Any) -> bool:
    """Whether ``option``'s value is a path (``Path`` or ``Path | None``), by the annotation typer keeps for it
    (another version of typer without it: no option is taken for one, and "" stays the working directory)."""
    import pathlib
    import typing

    annotation = getattr(getattr(option, "type_descriptor", None), "annotation", None)
    return annotation is pathlib.Path or pathlib.Path in typing.get_args(annotation)


def _refuse_options_fixed_by_the_run(path: list[str], unknown: list[str]) -> None:
    """``resume RUN --limit 5``: click's "No such option" does not say why; ``run --resume`` names such options
    as fixed by the run, and so does ``resume`` (``-mmock/x`` too: a short option with its value attached)."""
    if path != ["eval-harness", "resume"]:
        return
    from eval_harness.cli.run import FIXED_BY_THE_RUN, fixed_by_the_run

    given = [name if name in FIXED_BY_THE_RUN else name[:2] for name in unknown]
    given = [name for name in dict.fromkeys(given) if name in FIXED_BY_THE_RUN]
    if given:
        raise fixed_by_the_run("resume continues the run", given)


class _UsageMistake(Exception):
    """A command line mistake found before click parses it, with the usage lines click would print."""


def _refuse_missing_value(command: Any, command_path: str, name: str) -> NoReturn:
    """The last option given without its value: click says so without its usage lines (its parser raises the
    error without a context), unlike every other mistake on the line."""
    usage = typer.Context(command, info_name=command_path).get_usage()
    raise _UsageMistake(
        f"{usage}\nTry '{command_path} --help' for help.\n\nError: Option {name!r} requires an argument."
    )


# What a character the output's encoding lacks is written as: the sign of a negative difference ("−31.7") and the
# arrows of "differs:" keep their meaning in ASCII; anything else becomes "?".
_ASCII_FALLBACKS = {
    "−": "-", "–": "-", "—": "-", "→": "->", "←": "<-", "±": "+/-", "·": "|", "…": "...", "≤": "<=", "≥": ">=",
    "≈": "~", "×": "x", "█": "#", "▏": "|", "▎": "|", "▍": "|", "▌": "|", "▋": "|", "▊": "|", "▉": "#",
    "Δ": "d", "“": '"', "”": '"', "‘": "'", "’": "'", "✓": "v", "✗": "x",
}  # fmt: skip
_ERRORS = "eval_harness_ascii"


def _ascii_fallback(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):
        raise error
    text = error.object[error.start : error.end]
    return "".join(_ASCII_FALLBACKS.get(char, "?") for char in text), error.end


def _tolerate_narrow_encodings() -> None:
    """A standard output that cannot encode "·", "–" or "±" (cp1252 on a Windows runner, PYTHONIOENCODING=ascii)
    writes an ASCII stand-in ("-" for "−", "->" for "→") or "?" in their place instead of ending a finished run with
    a traceback and exit 1, the code of a failed gate; JSON goes out as escaped ASCII instead
    (``render.emit_text``), and stderr already escapes."""
    stdout = sys.stdout  # a text stream, or the process's guard around one (``stream_guard``), which passes it on
    encoding = getattr(stdout, "encoding", None)
    if hasattr(stdout, "reconfigure") and encoding and codecs.lookup(encoding).name != "utf-8":
        codecs.register_error(_ERRORS, _ascii_fallback)
        stdout.reconfigure(errors=_ERRORS)


def _redacted(text: str) -> str:
    """An error's text without the keys of the environment and ``.env``: a message may quote an exception of
    code we do not control (a plugin that fails to import, a scorer factory), which may hold one. Read here, on
    the way out, so no message path can miss it."""
    from eval_harness.config import Settings, redact

    try:
        secrets = Settings.load().secrets()
    except EvalHarnessError:  # an unreadable .env is what is being reported: the environment's keys at least
        secrets = Settings.load(env_file=None).secrets()
    return visible(redact(text, secrets))  # a message may quote a dataset value holding an escape sequence


def _os_error_text(error: OSError) -> str:
    """``results/r1/summary.json: No space left on device``: the file and the OS's words, without errno's
    ``[Errno 28]``."""
    if error.filename is None or not error.strerror:
        return str(error)
    target = f" → {error.filename2}" if error.filename2 is not None else ""
    return f"{error.filename}{target}: {error.strerror}"


def main(argv: list[str] | None = None) -> None:
    """Run the CLI (always ends in ``SystemExit``); an ``EvalHarnessError`` becomes one line on stderr and its
    exit code, never a traceback."""
    begin_command()
    _tolerate_narrow_encodings()
    try:
        args = sys.argv[1:] if argv is None else argv
        command = typer.main.get_command(_app_for(args))
        _refuse_repeated_options(command, args)
        # args=None (the console): click reads sys.argv itself, expanding globs on Windows as it always did
        command(args=argv, prog_name="eval-harness")
    except _UsageMistake as exc:
        print(exc, file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    except DatasetError as exc:
        print(f"error: {_redacted(str(exc))}", file=sys.stderr)
        for problem in exc.problems:
            print(_redacted(problem), file=sys.stderr)
        sys.exit(exc.exit_code)
    except EvalHarnessError as exc:
        print(f"error: {_redacted(str(exc))}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except BrokenPipeError:  # a plain print to stdout whose reader went away (rich and emit_text handle theirs)
        raise SystemExit(EXIT_BROKEN_PIPE) from None
    except OSError as exc:  # disk full, permission denied, ...: the OS's own words, without a traceback
        print(f"error: {_redacted(_os_error_text(exc))}", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    except SystemExit as exc:
        # typer turns a Ctrl-C outside a run's own handling (while the command parses, imports, plans or prints)
        # into a silent exit 130; a command's own exit 130 has said what it has to
        if exc.code == EXIT_INTERRUPTED and isinstance(getattr(exc.__context__, "__cause__", None), KeyboardInterrupt):
            print("interrupted", file=sys.stderr)
        raise
    except Exception as exc:
        # an interrupt that lands while a class is built comes wrapped: in a RuntimeError (Python 3.11, pydantic's
        # __set_name__) or a pydantic SchemaError (its schema generation)
        if not _from_an_interrupt(exc):
            raise
        print("interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)


def _from_an_interrupt(error: BaseException) -> bool:
    """Whether a KeyboardInterrupt is among the causes of ``error`` (what wrapped it raised in its place)."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def run_process() -> NoReturn:
    """The console script and ``python -m eval_harness``: ``main``, then exit without the interpreter's
    teardown.

    Tearing the interpreter down (freeing every module, pydantic's schemas, numpy) takes ~0.2 s after the
    work is done, a fifth of a short command. Every file we write is closed and fsync'ed before ``main``
    ends, so skipping the teardown loses nothing; stdout and stderr are flushed first. An unexpected
    exception still takes the normal path, so its traceback is printed.
    """
    guard_streams()
    try:
        main()
        code = 0
    except SystemExit as exc:
        if isinstance(exc.code, int) or exc.code is None:
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1  # Python's own code for SystemExit("message")
    for stream in (sys.stdout, sys.stderr):
        # a closed pipe: nothing more can be said (its guard's verdict on it, SystemExit, is taken below)
        with contextlib.suppress(OSError, ValueError, SystemExit):
            stream.flush()
    if type(sys.stdout).__name__ == "PacifyFlushWrapper":
        code = EXIT_BROKEN_PIPE  # click met a closed pipe and exited 1
    if code == 0 and reader_gone():
        code = EXIT_BROKEN_PIPE  # the reader of stdout or stderr went away; the command itself succeeded
    os._exit(code)


__all__ = ["app", "main", "run_process"]
