"""Writes the terminal transcripts the documentation shows, from the commands
they show, so that no default or output format can leave them stale.

    python examples/make_transcripts.py            # rewrite the files
    python examples/make_transcripts.py --check    # exit status 1 if a file differs

``examples/terminal_game.txt`` is a whole ``c4jax play`` session (a fixed
seed and fixed typed lines); ``docs/cli.md`` holds its start, between the
marker comments ``TRANSCRIPT_BEGIN`` and ``TRANSCRIPT_END``.
tests/test_transcripts.py reruns the session and checks both files.

The session runs with its lines on standard input, a pipe: no status line,
nothing echoed; the transcript puts each line typed after its prompt, as a
terminal shows it.  Everything else is the command's output as printed (80
columns), except the times of the AI's moves, which change from run to run:
"(1,000 simulations in 0.02 s, ...)" is written "(1,000 simulations in
<time>)".  The searches themselves are the same on every run (a fixed seed
and simulation count).
"""

from __future__ import annotations

import argparse
import difflib
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
TRANSCRIPT = ROOT / "examples" / "terminal_game.txt"
DOCS = ROOT / "docs" / "cli.md"
BEGIN = "<!-- TRANSCRIPT_BEGIN: examples/make_transcripts.py writes the block below; do not edit it -->"
END = "<!-- TRANSCRIPT_END -->"

PLAY_ARGS = ["play", "--game", "tictactoe", "--seed", "2024", "--show-search"]
# What the player types: a move, a typo, a taken cell, a hint, undo, an empty
# line (the legal moves), then the hints' moves to the end of the game, quit.
PLAY_INPUT = ["5", "five", "3", "hint", "7", "undo", "", "1", "hint", "6", "hint", "2", "hint", "7", "quit"]

PROMPT = re.compile(
    r"(Your move \([XO]\), \w+ 1-\d+ \[hint/undo/quit\]|What now\? undo, new \(another game\) or quit "
    r"\[undo/new/quit\]): "
)
TIMES = re.compile(r"  \(([\d,]+) simulations in [^)\n]*\)")
HEADER = "# examples/make_transcripts.py wrote this from the command below; times are written <time>"


def run_play(env: dict | None = None) -> tuple[str, int]:
    """``c4jax play`` with :data:`PLAY_ARGS`, the lines of :data:`PLAY_INPUT`
    on its standard input: its standard output and exit status.  ``env``:
    the environment (default this process's); the width is 80 columns, with
    no colour."""
    env = {k: v for k, v in (os.environ if env is None else env).items()
           if k not in ("FORCE_COLOR", "COLUMNS", "LINES")}
    env.update(COLUMNS="80", NO_COLOR="1", JAX_PLATFORMS=env.get("JAX_PLATFORMS", "cpu"))
    r = subprocess.run([sys.executable, "-m", "c4jax.cli", *PLAY_ARGS], input="\n".join(PLAY_INPUT) + "\n",
                       capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)
    if r.returncode != 0 or PROMPT.search(r.stdout) is None:
        raise RuntimeError(f"c4jax play failed (exit status {r.returncode}): {r.stderr[-2000:]}")
    return r.stdout, r.returncode


def play_transcript(stdout: str, code: int) -> str:
    """The session as a terminal shows it: each line typed after its
    prompt, the times written ``<time>``, the command and its exit status."""
    typed = iter(PLAY_INPUT)
    text = PROMPT.sub(lambda m: f"{m.group(1)}: {next(typed)}\n", stdout)
    if next(typed, None) is not None:
        raise RuntimeError("c4jax play stopped before reading every line of PLAY_INPUT")
    text = TIMES.sub(r"  (\1 simulations in <time>)", text)
    lines = [line.rstrip() for line in text.splitlines()]
    return "\n".join([HEADER, f"$ c4jax {' '.join(PLAY_ARGS)}", *lines, "$ echo $?", str(code)]) + "\n"


def docs_excerpt(transcript: str) -> str:
    """The start of the session that docs/cli.md shows: the command, then
    from the first move typed to the legal moves listed after the typo."""
    lines = transcript.splitlines()
    first = next(i for i, line in enumerate(lines) if PROMPT.match(line))
    last = next(i for i, line in enumerate(lines) if i > first and line.startswith("Legal moves:"))
    return "\n".join(["```text", lines[1], *lines[first:last + 1], "```"])


def with_excerpt(docs: str, excerpt: str) -> str:
    """``docs`` with the block between :data:`BEGIN` and :data:`END`
    replaced by ``excerpt``."""
    start, end = docs.index(BEGIN) + len(BEGIN), docs.index(END)
    return docs[:start] + "\n" + excerpt + "\n" + docs[end:]


def transcripts(env: dict | None = None) -> dict[pathlib.Path, str]:
    """Each file's text as the commands print it now."""
    transcript = play_transcript(*run_play(env))
    return {TRANSCRIPT: transcript, DOCS: with_excerpt(DOCS.read_text(encoding="utf-8"), docs_excerpt(transcript))}


def differences(files: dict[pathlib.Path, str]) -> str:
    """A unified diff of each file against the text it should hold ("" when all agree)."""
    out = []
    for path, text in files.items():
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        out += difflib.unified_diff(old.splitlines(keepends=True), text.splitlines(keepends=True),
                                    str(path.relative_to(ROOT)), "what the command prints now")
    return "".join(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="write nothing; exit status 1 if a file differs")
    args = p.parse_args(argv)
    files = transcripts()
    diff = differences(files)
    if args.check:
        sys.stdout.write(diff or "every transcript is what the commands print\n")
        return 1 if diff else 0
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
