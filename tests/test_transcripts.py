"""The terminal transcripts the documentation shows are what the commands
print: examples/make_transcripts.py reruns the documented ``c4jax play``
session (a fixed seed, fixed typed lines) and both files it writes
(examples/terminal_game.txt and docs/cli.md's excerpt) must hold exactly
its output, so that a change of defaults or output cannot leave them stale.
Runs share test_cli.py's environment (the CPU, the session's compilation
cache)."""

from __future__ import annotations

import importlib.util
import pathlib

from test_cli import cli_env  # noqa: F401  (the fixture)

SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "examples" / "make_transcripts.py"


def make_transcripts():
    spec = importlib.util.spec_from_file_location("make_transcripts", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_documented_play_session_is_what_c4jax_play_prints(cli_env):
    m = make_transcripts()
    files = m.transcripts(cli_env)
    assert set(files) == {m.TRANSCRIPT, m.DOCS}
    diff = m.differences(files)
    assert not diff, f"rerun python examples/make_transcripts.py (and read what changed):\n{diff}"
    # The excerpt is the transcript's start: the command, then the first move typed.
    docs = files[m.DOCS]
    block = docs[docs.index(m.BEGIN):docs.index(m.END)].splitlines()
    assert block[2] == "$ c4jax play --game tictactoe --seed 2024 --show-search"
    assert block[3] == "Your move (X), cell 1-9 [hint/undo/quit]: 5"
    assert "\n".join(block[3:-1]) in files[m.TRANSCRIPT]


def test_the_transcript_puts_each_typed_line_after_its_prompt_and_hides_only_times():
    m = make_transcripts()
    stdout = (
        "Your move (X), cell 1-9 [hint/undo/quit]: AI (O) plays cell 3  (1,000 simulations in 0.01 s, "
        "after 7.0 s of compiling, 9.1 s after start)\n"
        "Your move (X), cell 1-9 [hint/undo/quit]: 'five' is not a move: type a cell number 1-9.\n"
    )
    saved = m.PLAY_INPUT
    try:
        m.PLAY_INPUT = ["5", "five"]
        text = m.play_transcript(stdout, 0)
    finally:
        m.PLAY_INPUT = saved
    assert text.splitlines()[2:] == [
        "Your move (X), cell 1-9 [hint/undo/quit]: 5",
        "AI (O) plays cell 3  (1,000 simulations in <time>)",
        "Your move (X), cell 1-9 [hint/undo/quit]: five",
        "'five' is not a move: type a cell number 1-9.",
        "$ echo $?",
        "0",
    ]
