"""``python -m <module> ...`` for tests, started from a warm interpreter: the real CLI in
its own process, without paying torch's import each time.

Importing torch costs ~3 s of CPU on the 2-core box, most of a refused command's ~4 s, and
the suite runs hundreds of such commands. :func:`run_python` forks each command from a
``forkserver`` that imported the third-party libraries once (:data:`PRELOAD`; never Maple's
own packages, which each command imports fresh from its own ``sys.path``), then sets up
what a fresh ``python -m`` would have: argv, working directory, environment, ``sys.path``
(the command's folder, ``PYTHONPATH``, then the interpreter's own), default signal
handlers, multiprocessing's main process (not a child of the server), and exit handlers
run on the way out. What differs from a fresh interpreter is
only what the preloaded libraries did at import time. Tests that signal a command, read
its output while it runs, or time its start keep using ``subprocess``; so do the wheel
tests, which check real installed console scripts.
"""

from __future__ import annotations

import atexit
import json
import multiprocessing
import os
import resource
import runpy
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

# never poke_env: importing it starts its event-loop thread, which a fork would not carry
PRELOAD = ["torch", "numpy", "hydra", "omegaconf", "gymnasium", "psutil"]
# the handlers a fresh interpreter starts with
SIGNALS = {
    signal.SIGINT: signal.default_int_handler,
    signal.SIGTERM: signal.SIG_DFL,
    signal.SIGCHLD: signal.SIG_DFL,
    signal.SIGPIPE: signal.SIG_IGN,
}


@cache
def _context() -> multiprocessing.context.ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


@cache
def _interpreter_path() -> list[str]:
    """``sys.path`` of a fresh interpreter without ``PYTHONPATH``, less its first entry
    (the script's or working folder, set per command)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", "import json, sys; print(json.dumps(sys.path[1:]))"],
        capture_output=True, text=True, check=True, env=env, timeout=60,
    )  # fmt: skip
    return json.loads(out.stdout)


def _main_process() -> None:
    """Make this forked child multiprocessing's main process, as in a fresh interpreter:
    Maple asks ``multiprocessing.parent_process()`` whether it runs in an env worker (to
    hide GPUs and die with its parent), and a command must not answer yes."""
    mp_process = multiprocessing.process
    mp_process._parent_process = None  # type: ignore[attr-defined]
    mp_process._children = set()  # type: ignore[attr-defined]
    me = multiprocessing.current_process()
    me._identity = ()  # type: ignore[attr-defined]  # its children are named as a main's
    me.name = "MainProcess"


def _command(
    target: list[str], args: list[str], cwd: str, env: dict[str, str], base_path: list[str], io: str
) -> None:
    """The forked child: become ``python -m module args`` (``target`` ``["-m", module]``),
    ``python -c code args`` (``["-c", code]``) or ``python script args`` (``[script]``) in
    ``cwd`` with ``env``."""
    for fd, name in ((1, "out"), (2, "err")):
        handle = os.open(os.path.join(io, name), os.O_WRONLY)
        os.dup2(handle, fd)
        os.close(handle)
    for signum, handler in SIGNALS.items():
        signal.signal(signum, handler)
    _main_process()
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    script = None if target[0] in ("-m", "-c") else str(Path(cwd, target[0]).resolve())
    sys.path[:] = [str(Path(script).parent) if script else cwd, *extra, *base_path]
    sys.argv = [script or target[0], *args]  # run_module puts the module's file here
    try:
        if script:
            runpy.run_path(script, run_name="__main__")
        elif target[0] == "-c":
            exec(compile(target[1], "<string>", "exec"), {"__name__": "__main__"})
        else:
            runpy.run_module(target[1], run_name="__main__", alter_sys=True)
    finally:
        atexit._run_exitfuncs()  # a forked child leaves with os._exit: run them as Python would
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        Path(io, "rss").write_text(str(peak))


def run_python(
    cmd: Sequence[str | Path],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
    capture_output: bool = True,
    text: bool = True,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(cmd, capture_output=True, text=True, ...)`` for ``cmd`` =
    ``[sys.executable, "-m", module, *args]``, ``[sys.executable, "-c", code, *args]`` or
    ``[sys.executable, script, *args]``, run from the warm interpreter; the result also has
    ``maxrss_kb``, the command's peak resident memory. A command still running at
    ``timeout`` is killed and raises :class:`subprocess.TimeoutExpired`; ``check`` raises
    on a non-zero exit code."""
    cmd = [str(part) for part in cmd]
    if cmd[0] != sys.executable or not (capture_output and text):
        raise ValueError(f"run_python runs this interpreter, output captured as text: {cmd}")
    target, args = (cmd[1:3], cmd[3:]) if cmd[1] in ("-m", "-c") else (cmd[1:2], cmd[2:])
    context = _context()
    with tempfile.TemporaryDirectory(prefix="warm-cli-") as io:
        for name in ("out", "err"):
            Path(io, name).touch()
        process = context.Process(
            target=_command,
            args=(
                target,
                args,
                str(Path(cwd or os.getcwd()).resolve()),
                dict(os.environ if env is None else env),
                _interpreter_path(),
                io,
            ),
        )
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired(cmd, timeout)
        out, err = (Path(io, name).read_text(errors="replace") for name in ("out", "err"))
        rss = Path(io, "rss")
        result = subprocess.CompletedProcess(cmd, process.exitcode, out, err)
        result.maxrss_kb = int(rss.read_text()) if rss.is_file() else 0  # type: ignore[attr-defined]
    if check:
        result.check_returncode()
    return result
