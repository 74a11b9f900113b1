"""``c4jax play`` driven as a user drives it: pexpect in a pseudo-terminal.

The screen a turn leaves is rebuilt from the raw output (carriage returns,
cursor-up and line erasing applied, as a terminal does), so that a status
line that erases itself is not counted.  Runs share test_cli.py's
environment: the CPU, one compilation cache per test session.
"""

from __future__ import annotations

import functools
import io
import re
import time

import pytest

from test_cli import CMD, SIMS, best_row, cli_env, run, strip  # noqa: F401  (cli_env: the fixture)

pexpect = pytest.importorskip("pexpect")

# pexpect forks this process; where another test has started JAX here, JAX
# warns about fork.  The child execs at once, so the warning does not apply.
pytestmark = pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning")

PROMPT = r"Your move \([XO]\), (?:cell|column) 1-\d+ \[hint/undo/quit\]: "
AFTER = r"What now\? undo, new \(another game\) or quit \[undo/new/quit\]: "
MOVE, OVER, EXIT = range(3)  # what Terminal.wait met: a move's prompt, the one after a game, the end

_TOKEN = re.compile(r"\x1b\[([0-9;]*)([A-Za-z])|\x1b\[\?[0-9;]*[A-Za-z]|\x1b\][^\x07]*\x07|\r|\n|[^\x1b\r\n]+")


def screen(raw: str) -> list[str]:
    """The lines that ``raw`` terminal output leaves on a screen (text,
    line feeds, carriage returns, cursor up, erase line; other escape codes
    dropped)."""
    lines: list[list[str]] = [[]]
    row = col = 0
    for m in _TOKEN.finditer(raw):
        tok = m.group(0)
        if tok == "\n":
            row, col = row + 1, 0
            if row == len(lines):
                lines.append([])
        elif tok == "\r":
            col = 0
        elif m.group(2) == "A":
            row = max(row - int(m.group(1) or 1), 0)
        elif m.group(2) == "K":
            lines[row] = []
        elif not tok.startswith("\x1b"):
            line = lines[row]
            line.extend(" " * (col - len(line)))
            line[col:col + len(tok)] = tok
            col += len(tok)
    return ["".join(line).rstrip() for line in lines]


class Terminal:
    """A ``c4jax play`` session in a pseudo-terminal of ``lines`` x 120;
    ``log`` is everything it printed (ANSI codes stripped)."""

    def __init__(self, env, *args, lines: int = 50):
        self._raw = io.StringIO()
        self.child = pexpect.spawn(
            CMD[0], CMD[1:] + ["play", *args], env=env, encoding="utf-8", timeout=120,
            dimensions=(lines, 120), codec_errors="replace",  # an echoed "^C" may split a character
        )
        self.child.logfile_read = self._raw
        self.turn: list[str] = []  # the screen lines of the last wait

    @property
    def log(self) -> str:
        return strip(self._raw.getvalue())

    def wait(self) -> tuple[int, str]:
        """Waits for the next prompt or the end of the output; returns MOVE,
        OVER or EXIT and the text printed since the last wait as a screen
        shows it (``turn`` holds its lines)."""
        idx = self.child.expect([PROMPT, AFTER, pexpect.EOF])
        after = self.child.after if isinstance(self.child.after, str) else ""
        self.turn = screen(self.child.before + after)
        return idx, "\n".join(self.turn)

    def send(self, line: str) -> tuple[int, str]:
        self.child.sendline(line)
        return self.wait()

    def legal(self) -> list[int]:
        idx, text = self.send("")
        assert idx == MOVE
        return legal_moves(text)

    def finish(self) -> int:
        self.child.expect(pexpect.EOF)
        self.child.close()
        assert "Traceback" not in self.log, self.log
        return self.child.exitstatus


def legal_moves(text: str) -> list[int]:
    m = re.findall(r"Legal moves: ([\d ]+)", text)
    assert m, text
    return [int(x) for x in m[-1].split()]


LINES = [(1, 2, 3), (4, 5, 6), (7, 8, 9), (1, 4, 7), (2, 5, 8), (3, 6, 9), (1, 5, 9), (3, 5, 7)]


def tictactoe_result(moves: list[int]) -> str:
    """The result of a finished tic-tac-toe game in plain Python (no JAX in
    this process: pexpect forks it)."""
    for player in (0, 1):
        mine = set(moves[player::2])
        if any(set(line) <= mine for line in LINES):
            return f"{'XO'[player]} wins"
    assert len(moves) == 9, moves
    return "draw"


@functools.lru_cache(maxsize=None)
def tictactoe_value(moves: tuple[int, ...]) -> int:
    """The game-theoretic value of a tic-tac-toe position (cells 1-9) for the
    player to move: 1 win, 0 draw, -1 loss (plain negamax)."""
    mover = len(moves) % 2
    best = -1
    for cell in set(range(1, 10)) - set(moves):
        after = moves + (cell,)
        if any(set(line) <= set(after[mover::2]) for line in LINES):
            return 1
        best = max(best, 0 if len(after) == 9 else -tictactoe_value(after))
    return best


def summary_moves(text: str, stopped: bool = False) -> str:
    """The move list of the summary line in ``text``."""
    head = "Stopped" if stopped else "Game over"
    m = re.search(rf"{head}: (\d+) moves? played \(([^)]*)\); result", text)
    assert m, text
    return m.group(2)


def test_tictactoe_game_bad_input_undo_hint_to_the_end(cli_env):
    t = Terminal(cli_env, "--game", "tictactoe", "-n", SIMS, "--seed", "3", "--show-search")
    idx, text = t.wait()
    assert idx == MOVE and "tic-tac-toe" in text and "You are X and move first" in text
    assert " 1 | 2 | 3" in text  # the empty board, cells numbered

    bad = {
        "abc": "'abc' is not a move",
        "0": "There is no cell 0: cells are 1-9.",
        "10": "There is no cell 10: cells are 1-9.",
        "": "Type a cell number 1-9",
    }
    for line, message in bad.items():
        idx, text = t.send(line)
        assert idx == MOVE and message in text, text
        assert legal_moves(text) == list(range(1, 10))
    idx, text = t.send("undo")
    assert idx == MOVE and "Nothing to undo." in text

    idx, text = t.send("5")
    assert idx == MOVE
    ai = int(re.search(r"AI \(O\) plays cell (\d)", text).group(1))
    assert ai != 5
    # --show-search: the table's best row is the move played, its principal
    # variation starts with it, written as `c4jax analyze` takes moves.
    assert "principal variation" in text and "Q for O" in text and "proven" in text
    cells = best_row(text)
    # move | visits | share | Q | proven | principal variation | <- best
    assert cells[0] == str(ai) and re.fullmatch(rf"{ai}\d*", cells[5]), cells
    assert re.fullmatch(r"|win in \d+|draw|loss in \d+|>= draw|<= draw", cells[4]), cells
    for taken in (5, ai):
        idx, text = t.send(str(taken))
        assert idx == MOVE and f"Cell {taken} is taken." in text, text
        assert taken not in legal_moves(text)
    idx, text = t.send("hint")
    assert idx == MOVE
    hint = int(re.search(r"Hint: the AI would play cell (\d)", text).group(1))
    assert hint not in (5, ai)
    assert "AI (O) plays" not in text  # a hint plays nothing
    assert t.legal() == sorted(set(range(1, 10)) - {5, ai})

    idx, text = t.send("undo")
    assert idx == MOVE and "Took back your last move and the AI's." in text
    assert t.legal() == list(range(1, 10))

    # Play to the end: always the lowest legal cell.
    for _ in range(5):
        idx, text = t.send(str(t.legal()[0]))
        if idx == OVER:
            break
    assert idx == OVER, t.log
    m = re.search(r"Game over: (\d) moves played \((\d+)\); result: (.*)\.$", text, flags=re.M)
    assert m, text
    moves = [int(x) for x in m.group(2)]  # a digit a move, as `c4jax analyze` takes them
    assert len(moves) == int(m.group(1)) == len(set(moves))
    result = tictactoe_result(moves)
    assert m.group(3) == {"X wins": "X wins (you)", "O wins": "O wins (the AI)", "draw": "draw"}[result]
    t.child.sendline("quit")
    assert t.finish() == 0


@pytest.mark.slow
def test_connect4_full_column_is_refused_and_the_size_is_columns_x_rows(cli_env):
    # connect 5 on 4 rows x 5 columns: nobody can win before column 1 is full.
    t = Terminal(cli_env, "--rows", "4", "--cols", "5", "--connect", "5", "-n", "32", "--seed", "0")
    idx, text = t.wait()
    assert idx == MOVE and "Connect 5 on 5 columns x 4 rows" in text
    for _ in range(4):
        idx, text = t.send("1")
        assert idx == MOVE
        if "Column 1 is full." in text:
            break
        assert "AI (O) plays column" in text
    else:
        idx, text = t.send("1")
    assert "Column 1 is full." in text, t.log
    assert 1 not in legal_moves(text)
    idx, text = t.send("6")
    assert idx == MOVE and "There is no column 6: columns are 1-5." in text
    t.child.sendline("quit")
    idx, text = t.wait()
    assert idx == EXIT and "result so far: undecided" in text
    assert re.fullmatch(r"[1-5]+", summary_moves(text, stopped=True)), text
    assert t.finish() == 0


@pytest.mark.slow
@pytest.mark.parametrize("how", ["quit", "eof", "ctrl-c"])
def test_quit_and_eof_exit_0_and_ctrl_c_at_the_prompt_exits_130(cli_env, how):
    """Each ends the game with its summary; Ctrl-C (SIGINT) with 130, as a
    shell reports a process it stopped."""
    t = Terminal(cli_env, "--game", "tictactoe", "-n", SIMS, "--seed", "1", "--first", "ai")
    idx, text = t.wait()
    assert idx == MOVE
    ai = re.search(r"AI \(X\) plays cell (\d)", text).group(1)
    if how == "quit":
        t.child.sendline("quit")
    elif how == "eof":
        t.child.sendeof()
    else:
        t.child.sendintr()
    idx, text = t.wait()
    assert idx == EXIT
    assert text.strip().splitlines()[-1] == (
        f"Stopped: 1 move played ({ai}); result so far: undecided, O to move."
    )
    assert t.finish() == (130 if how == "ctrl-c" else 0)


@pytest.mark.slow
def test_the_status_says_compiling_then_thinking_with_a_clock_and_ctrl_c_while_thinking_exits_130(cli_env):
    """The first search of a board compiles (nothing cached: --no-cache),
    and the status line says so; then it says the AI thinks, counting the
    seconds of its budget.  Ctrl-C then ends the game with its summary and
    exit status 130, not an abort of the interpreter's shutdown while XLA
    threads run (SIGABRT, 134)."""
    # Connect 4 from the empty board: 30 s of thinking end only by Ctrl-C (a
    # solved root, as tic-tac-toe's soon is, would end the search first).
    t = Terminal({**cli_env, "C4JAX_CACHE_DIR": ""}, "--think", "30", "--seed", "2", "--first", "ai", "--no-cache")
    t.child.expect("compiling the search")
    t.child.expect(r"the AI is thinking: (\d+) s of 30 s")
    first = int(t.child.match.group(1))
    t.child.expect(r"the AI is thinking: (\d+) s of 30 s")
    while int(t.child.match.group(1)) < first + 1:  # the clock runs
        t.child.expect(r"the AI is thinking: (\d+) s of 30 s")
    t.child.sendintr()
    idx, text = t.wait()
    assert idx == EXIT
    assert text.strip().splitlines()[-1] == "Stopped: 0 moves played (none); result so far: undecided, X to move."
    assert t.finish() == 130


def test_ctrl_c_while_the_search_compiles_exits_130_with_the_summary(cli_env):
    """The AI moves first on a board no search has been compiled for: the
    status line says it compiles; Ctrl-C then stops at once (the compile
    runs in a thread the main thread waits for) with the summary and 130."""
    t = Terminal({**cli_env, "C4JAX_CACHE_DIR": ""}, "--first", "ai", "--rows", "5", "--cols", "6", "-n", "37",
                 "--no-cache", "--seed", "1")
    t.child.expect("compiling the search")
    start = time.perf_counter()
    t.child.sendintr()
    idx, text = t.wait()
    assert idx == EXIT and time.perf_counter() - start < 10, text
    assert text.strip().splitlines()[-1] == "Stopped: 0 moves played (none); result so far: undecided, X to move."
    assert t.finish() == 130


@pytest.mark.slow
def test_text_typed_while_the_ai_thinks_is_discarded(cli_env):
    """A line typed during the AI's search is neither echoed onto the
    status line nor read as the next move: the next prompt waits for a new
    line, and the game goes on normally."""
    t = Terminal(cli_env, "--think", "1", "--seed", "4")
    assert t.wait()[0] == MOVE
    t.child.sendline("4")
    t.child.expect(r"the AI is thinking: \d\.\d s of 1 s")
    t.child.sendline("seven")  # typed while the AI thinks
    idx, text = t.wait()
    assert idx == MOVE and re.search(r"AI \(O\) plays column \d", text), text
    assert "is not a move" not in text and "Type a column" not in text, text
    assert t.legal() == list(range(1, 8))  # the next line read is the one typed at the prompt
    idx, text = t.send("3")
    assert idx == MOVE and re.search(r"AI \(O\) plays column \d", text), text
    assert "seven" not in t.log  # never echoed
    t.child.sendline("quit")
    idx, text = t.wait()
    assert idx == EXIT and re.fullmatch(r"4[1-7]3[1-7]", summary_moves(text, stopped=True)), text
    assert t.finish() == 0


@pytest.mark.slow
def test_a_tall_board_fits_the_terminal_and_is_drawn_once_per_turn(cli_env):
    """40 rows in a 40-line terminal: each turn (the line typed, the AI's
    move, the board, the prompt) fits the screen, the board drawn once with
    its bottom rows, column numbers and status line; ``board`` shows all."""
    t = Terminal(cli_env, "--rows", "40", "-n", "20", "--seed", "0", lines=40)
    idx, text = t.wait()
    assert idx == MOVE and "Connect 4 on 7 columns x 40 rows" in text, text
    numbers = re.compile(r"\s*1 2 3 4 5 6 7")
    for ply in (2, 4):
        idx, text = t.send("4")
        assert idx == MOVE, text
        turn = t.turn
        assert len(turn) <= 40, text
        assert sum(bool(numbers.fullmatch(ln)) for ln in turn) == 1, text  # one board this turn
        assert turn[-1].startswith("Your move (X)")
        assert re.match(r"AI \(O\) plays column \d", turn[1]), text
        assert numbers.fullmatch(turn[-3]) and turn[-2] == f"X to move (ply {ply})", text
        rows = [ln.split() for ln in turn[:-3] if len(ln.split()) == 7]
        assert rows[-1][3] == "X", text  # the bottom row: your first stone in column 4
        stones = [c for row in rows for c in row]
        assert stones.count("X") == stones.count("O") == ply // 2, text
        hidden = re.search(r"\.\.\. top (\d+) of 40 rows not shown \(empty\)", text)
        assert hidden and 40 - int(hidden.group(1)) == len(rows), text
    idx, text = t.send("board")
    assert idx == MOVE and sum(len(ln.split()) == 7 and set(ln.split()) <= set("·.XO") for ln in t.turn) == 40
    t.child.sendline("quit")
    idx, text = t.wait()
    assert idx == EXIT and re.fullmatch(r"4[1-7]4[1-7]", summary_moves(text, stopped=True)), text
    assert t.finish() == 0


@pytest.mark.slow
def test_after_the_game_undo_a_new_game_or_quit(cli_env):
    """A finished game asks for undo, new or quit: undo takes back the
    human's last move (and the AI's answer after it), new starts from the
    empty board, anything else is refused; EOF ends the program cleanly."""
    t = Terminal(cli_env, "--game", "tictactoe", "-n", SIMS, "--seed", "5")

    def play_to_the_end() -> str:
        idx = MOVE
        while idx == MOVE:
            idx, text = t.send(str(t.legal()[0]))
        assert idx == OVER, t.log
        return text

    assert t.wait()[0] == MOVE
    text = play_to_the_end()
    moves = [int(c) for c in summary_moves(text)]
    result = tictactoe_result(moves)
    assert {"X wins": "You win!", "O wins": "The AI wins.", "draw": "Nobody wins."}[result] in text
    for line, message in (("hint", "'hint' is none of them"), ("3", "'3' is none of them"), ("", "The game is over")):
        idx, text = t.send(line)
        assert idx == OVER and message in text, text

    idx, text = t.send("undo")
    took = 1 if len(moves) % 2 == 1 else 2  # the game ended on your move (X) or on the AI's
    assert idx == MOVE and ("Took back your last move." if took == 1 else "Took back your last move and the AI's.") in text
    assert f"X to move (ply {len(moves) - took})" in text
    assert t.legal() == sorted(set(range(1, 10)) - set(moves[:-took]))

    play_to_the_end()
    idx, text = t.send("new")
    assert idx == MOVE and "New game" in text and "X to move (ply 0)" in text
    assert t.legal() == list(range(1, 10))
    play_to_the_end()
    t.child.sendeof()
    idx, _ = t.wait()
    assert idx == EXIT and t.finish() == 0


@pytest.mark.slow
def test_a_lost_root_shows_its_value_as_the_moves_show_theirs(cli_env):
    """Where the solver proved every move lost, the root's value and each
    move's Q agree (-1.000) and the title says what was proven."""
    t = Terminal(cli_env, "--game", "tictactoe", "-n", SIMS, "--seed", "2", "--first", "ai", "--show-search")
    idx, text = t.wait()
    moves: list[int] = []
    while idx == MOVE:
        moves += [int(m) for m in re.findall(r"AI \(X\) plays cell (\d)", text)]
        empty = [m for m in range(1, 10) if m not in moves]
        threats = [m for m in empty if any(set(line) <= set(moves[0::2]) | {m} for line in LINES)]
        if len(threats) >= 2 and tictactoe_value(tuple(moves)) == -1:
            break  # X threatens two cells: O is lost
        # O blocks a single threat, else plays a losing move.
        losing = [m for m in empty if tictactoe_value(tuple(moves) + (m,)) == 1]
        move = threats[0] if threats else (losing or empty)[0]
        moves.append(move)
        idx, text = t.send(str(move))
    assert idx == MOVE, f"the game ended before O was lost: {t.log}"
    idx, text = t.send("hint")
    assert idx == MOVE
    title = re.search(r"Hint search: [\d,]+ root visits, (value .*)", text).group(1).strip()
    assert re.fullmatch(r"value -1\.000 \(proven loss in \d+\)", title), text
    rows = [ln for ln in t.turn if re.match(r"│\s+\d │", ln)]
    assert rows and len(rows) == 9 - len(moves), text
    for row in rows:
        cells = [c.strip() for c in row.strip("│").split("│")]
        assert cells[3] == "-1.000" and cells[4].startswith("loss in"), text
    assert re.search(r"Hint: the AI would play cell \d \(visit share \d+%, Q -1\.000\)", text), text
    t.child.sendline("quit")
    assert t.finish() == 0


@pytest.mark.slow
def test_no_value_is_written_minus_zero(cli_env):
    """This seed's hint on the empty 4 x 4 board has a root mean a hair
    below zero: the title writes it +0.000, as the table writes its Q."""
    t = Terminal(cli_env, "--rows", "4", "--cols", "4", "-n", "48", "--seed", "25", "--show-search")
    assert t.wait()[0] == MOVE
    idx, text = t.send("hint")
    assert idx == MOVE
    assert re.search(r"Hint search: 48 root visits, value \+0\.000$", text, flags=re.M), text
    t.child.sendline("quit")
    assert t.finish() == 0
    assert "-0.000" not in t.log


@pytest.mark.slow
def test_the_largest_board_plays_analyzes_and_plots(cli_env, tmp_path):
    """64 rows x 64 columns (two words per column): a 120-column terminal
    shows each row of the board in one line, its bottom rows under a line
    that counts the rows left out, moves above 9 are typed as numbers and
    listed with commas, and ``analyze`` lists all 64 columns and writes its
    plot."""
    t = Terminal(cli_env, "--rows", "64", "--cols", "64", "-n", "16", "--seed", "0")
    idx, text = t.wait()
    assert idx == MOVE and "Connect 4 on 64 columns x 64 rows" in text, text
    idx, text = t.send("64")
    assert idx == MOVE and "AI (O) plays column" in text, text
    board = [ln for ln in t.turn if re.fullmatch(r"[·.XO]{64}", ln.strip())]
    # One character per cell, drawn once, as many rows as the 50 lines hold.
    hidden = re.search(r"\.\.\. top (\d+) of 64 rows not shown \(empty\)", text)
    assert hidden and len(board) == 64 - int(hidden.group(1)) and len(t.turn) <= 50, text
    bottom = board[-1].strip()
    assert bottom[-1] == "X" and bottom.count("O") == 1 and bottom.count("X") == 1
    t.child.sendline("quit")
    idx, text = t.wait()
    assert idx == EXIT and re.fullmatch(r"64,\d+", summary_moves(text, stopped=True)), text
    assert t.finish() == 0

    png = tmp_path / "visits.png"
    r = run(cli_env, "analyze", "64,64,1,32", "--rows", "64", "--cols", "64", "-n", "64", "--plot", png)
    assert r.returncode == 0, r.stderr
    rows = [ln for ln in r.stdout.splitlines() if re.match(r"│\s+\d+ │", ln)]
    assert [int(ln.split("│")[1]) for ln in rows] == list(range(1, 65))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_value_texts_write_no_minus_zero_and_name_the_proof():
    import numpy as np
    from types import SimpleNamespace

    from c4jax.present.analysis import fmt_q, root_value_text, shown_q

    def out(value, lower, upper, plies):
        extra = SimpleNamespace(value_lower=np.float32([[lower]]), value_upper=np.float32([[upper]]),
                                value_plies=np.int32([[plies]]))
        return SimpleNamespace(value=np.float32([value]), search_tree=SimpleNamespace(extra_data=extra))

    assert fmt_q(-1e-9) == fmt_q(-0.0) == "+0.000"
    assert root_value_text(out(-1e-9, -1.0, 1.0, 0)) == "value +0.000"
    assert root_value_text(out(-1.0, -1.0, -1.0, 6)) == "value -1.000 (proven loss in 6)"
    assert root_value_text(out(0.25, 0.0, 1.0, 0)) == "value +0.250 (proven >= draw)"
    assert shown_q(-0.988, -1.0, -1.0) == -1.0 and shown_q(0.9, 1.0, 1.0) == 1.0
    assert shown_q(0.1, 0.0, 0.0) == 0.1 and shown_q(-0.3, -1.0, 1.0) == -0.3
