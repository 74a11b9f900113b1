"""Ctrl-C in the commands that write games (``selfplay``, ``arena``), sent
as a user sends it: SIGINT from a pseudo-terminal (pexpect).  Both exit
with 130 and one line saying what was kept (``play``'s Ctrl-C:
test_cli_play.py).  Runs share test_cli.py's environment."""

from __future__ import annotations

import re
import time

import pytest

from test_cli import CMD, cli_env, strip  # noqa: F401  (cli_env: the fixture)

pexpect = pytest.importorskip("pexpect")

# pexpect forks this process; where another test has started JAX here, JAX
# warns about fork.  The child execs at once, so the warning does not apply.
pytestmark = pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning")


def spawn(env, *args):
    # codec_errors: the terminal echoes Ctrl-C as "^C" wherever the output
    # stands, possibly inside a character of the progress bar.
    return pexpect.spawn(CMD[0], CMD[1:] + [str(a) for a in args], env=env, encoding="utf-8", timeout=180,
                         dimensions=(50, 120), codec_errors="replace")


def interrupt(child) -> str:
    """Sends Ctrl-C and returns everything the command printed after it."""
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    return strip(child.before)


def test_selfplay_interrupted_keeps_the_games_of_its_finished_batches(cli_env, tmp_path):
    from c4jax.tools.records import read_games

    out = tmp_path / "games.jsonl"
    # Batches of two games, far more games than play before Ctrl-C.
    child = spawn(cli_env, "selfplay", "--game", "tictactoe", "--games", 100_000, "--batch-size", 2, "-n", 8,
                  "--devices", 1, "--out", out)
    deadline = time.monotonic() + 150
    while not (out.exists() and out.read_bytes().count(b"\n") >= 4):
        assert child.isalive() and time.monotonic() < deadline, strip(child.before or "")
        time.sleep(0.1)
    text = interrupt(child)
    assert child.exitstatus == 130, text
    m = re.search(r"c4jax selfplay: interrupted: ([\d,]+) of 100,000 games are in (\S+) \(each batch's games are "
                  r"written when the batch ends\); add --resume to play the rest", text)
    assert m and m.group(2) == str(out), text
    records = read_games(out)  # whole lines only
    assert int(m.group(1).replace(",", "")) == len(records) >= 4
    assert sorted(r.index for r in records) == list(range(len(records)))  # the first batches, each whole
    assert "Traceback" not in text


def test_selfplay_interrupted_before_a_batch_ends_says_no_game_was_written(cli_env, tmp_path):
    out = tmp_path / "games.jsonl"
    child = spawn(cli_env, "selfplay", "--game", "tictactoe", "--games", 100_000, "--batch-size", 2, "-n", 9,
                  "--devices", 1, "--out", out, "--no-cache")
    child.expect("self-play mcts:9")  # the progress bar: compiling the first batch's game loop
    text = interrupt(child)
    assert child.exitstatus == 130, text
    assert "c4jax selfplay: interrupted: no game was written (each batch's games are written when the batch ends)" \
        in text
    assert not out.exists()  # the run made it and leaves nothing behind


def test_arena_interrupted_says_its_games_were_not_written(cli_env, tmp_path):
    out = tmp_path / "games.jsonl"
    child = spawn(cli_env, "arena", "mcts:8", "random", "--game", "tictactoe", "--games", 100_000,
                  "--batch-size", 2, "--out", out)
    child.expect("mcts:8 vs random")  # the progress bar: the games compile or run
    text = interrupt(child)
    assert child.exitstatus == 130, text
    assert f"c4jax arena: interrupted: no game was written to {out} (the arena writes its games once all are " \
        "played)" in text
    assert not out.exists()


def _interrupt_inside_numpy(*args, **kwargs):
    """A Ctrl-C as it comes out of numpy when it lands in a callback of
    numpy's C code: a SystemError with the KeyboardInterrupt as its cause."""
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as e:
        raise SystemError("<function _ScalarMeta.__numpy_dtype__> returned a result with an exception set") from e


@pytest.mark.parametrize("command, target, argv, kept", [
    ("selfplay", "c4jax.tools.self_play.selfplay", ["--games", "4", "--out", "{out}"],
     "no game was written (each batch's games are written when the batch ends)"),
    ("arena", "c4jax.tools.matches.arena", ["mcts:8", "random", "--games", "4", "--out", "{out}"],
     "no game was written to {out} (the arena writes its games once all are played)"),
    ("train", "c4jax.training.loop.train", ["--minutes", "1", "--out", "{out}"],
     "the run in {out} is kept up to its last checkpoint (no iteration of this session); the same command "
     "resumes it"),
    ("analyze", "c4jax.cli.analyze.run", ["1"], None),
])
def test_a_ctrl_c_that_numpy_turns_into_a_system_error_is_still_exit_130(command, target, argv, kept, tmp_path,
                                                                         monkeypatch, capsys):
    import c4jax.cli as cli

    if command == "train":
        pytest.importorskip("equinox", reason="the [train] extra")  # CI installs it (README's test command)
    out = str(tmp_path / "out")
    monkeypatch.setattr(target, _interrupt_inside_numpy)
    exits = []
    monkeypatch.setattr(cli, "hard_exit", exits.append)
    argv = [command, "--game", "tictactoe", "--no-cache"] + [a.format(out=out) for a in argv]
    assert cli.main(argv) == 130 and exits == [130]
    err = capsys.readouterr().err
    expected = f"c4jax {command}: interrupted" + (f": {kept.format(out=out)}" if kept else "")
    assert err.strip().splitlines()[-1] == expected, err


def test_a_ctrl_c_during_start_up_is_held_until_jax_is_imported_then_exit_130(tmp_path, monkeypatch, capsys):
    """Ctrl-C while ``import jax`` runs (its C extensions crash or turn the
    interrupt into another error when it lands inside them) is held back and
    ends the command once start-up is over."""
    import os
    import signal

    import c4jax.cli as cli

    started = []

    def start_up_interrupted(folder):
        os.kill(os.getpid(), signal.SIGINT)  # delivered now: held, no KeyboardInterrupt here
        started.append(folder)

    monkeypatch.setattr(cli, "enable_compilation_cache", start_up_interrupted)
    monkeypatch.setattr("c4jax.cli.analyze.run", lambda *a: pytest.fail("the command ran after the Ctrl-C"))
    exits = []
    monkeypatch.setattr(cli, "hard_exit", exits.append)
    before = signal.getsignal(signal.SIGINT)
    try:
        assert cli.main(["analyze", "1", "--game", "tictactoe"]) == 130 and exits == [130] and len(started) == 1
        assert capsys.readouterr().err.strip().splitlines()[-1] == "c4jax analyze: interrupted"
    finally:
        signal.signal(signal.SIGINT, before)


# The console script's entry (c4jax.__main__.run) with a Ctrl-C delivered while
# it imports the command's modules: from inside that import, so the test does
# not depend on timing.
_IMPORT_INTERRUPTED = """
import builtins, os, signal, sys
import c4jax.__main__ as entry
real_import = builtins.__import__
def interrupting_import(name, *args, **kwargs):
    if name == "c4jax.cli" and not sys.modules.get("c4jax.cli"):
        os.kill(os.getpid(), signal.SIGINT)
    return real_import(name, *args, **kwargs)
builtins.__import__ = interrupting_import
sys.argv = ["c4jax", "analyze", "1", "--game", "tictactoe", "--no-cache"]
entry.run()
print("the command ran after the Ctrl-C")
"""


def test_a_ctrl_c_while_the_console_script_imports_the_command_is_exit_130_and_one_line(tmp_path):
    """Ctrl-C between the process start and ``main`` (the import of the
    command's modules, before JAX) ends the command as any other start-up
    interrupt does: exit 130, one line, no traceback."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _IMPORT_INTERRUPTED], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 130, (r.returncode, r.stderr)
    assert r.stderr.strip().splitlines() == ["c4jax analyze: interrupted"] and r.stdout == "", r.stderr


_HANDLER_AT_JAX_IMPORT = """
import builtins, signal, sys
from c4jax.cli import main
from c4jax.cli.terminal import on_interrupt
real_import = builtins.__import__
seen = []
def recording_import(name, *args, **kwargs):
    if name == "jax" and not seen:
        handler = signal.getsignal(signal.SIGINT)
        seen.append("held" if handler not in (on_interrupt, signal.default_int_handler) else "not held")
    return real_import(name, *args, **kwargs)
builtins.__import__ = recording_import
main(["analyze", "1", "--game", "tictactoe", "-n", "8", "--no-cache", "--json"])
print(seen[0])
"""


def test_jax_is_imported_while_ctrl_c_is_held_with_or_without_the_cache(tmp_path):
    """JAX's C extensions turn a Ctrl-C that lands in their initialisation
    into an ``ImportError``: ``main`` imports them inside its start-up hold,
    with ``--no-cache`` too (no cache to switch on: JAX would load later)."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", _HANDLER_AT_JAX_IMPORT], capture_output=True, text=True, timeout=300,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "held", r.stdout[-300:]


def test_the_installed_console_script_starts_at_the_hold():
    """The installed ``c4jax`` command runs ``c4jax.__main__.run`` (the entry
    that holds Ctrl-C from its first call), as ``python -m c4jax`` does."""
    from importlib.metadata import entry_points

    (script,) = entry_points(group="console_scripts", name="c4jax")
    assert script.value == "c4jax.__main__:run"


def test_a_ctrl_c_inside_a_gc_callback_is_sent_again_once_the_callback_is_over():
    """Python prints and drops an exception raised in a gc callback (JAX runs
    one at every collection), so the commands' handler sends the signal again
    instead; anywhere else it raises KeyboardInterrupt."""
    import gc
    import signal
    import sys

    from c4jax.cli.terminal import on_interrupt

    seen = []
    before = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))

    def callback(phase, info):
        if phase == "start" and not called:
            called.append(phase)
            try:
                on_interrupt(signal.SIGINT, sys._getframe())
            except KeyboardInterrupt:
                raised.append(True)

    called, raised = [], []
    gc.callbacks.append(callback)
    try:
        gc.collect()
        deadline = time.monotonic() + 5
        while not seen and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        gc.callbacks.remove(callback)
        signal.signal(signal.SIGINT, before)
    assert called and not raised and seen == [signal.SIGINT]
    with pytest.raises(KeyboardInterrupt):
        on_interrupt(signal.SIGINT, sys._getframe())
