"""``c4jax play``: a game against the MCTS AI in the terminal (OpenSpiel's
``examples/mcts.py`` and ``bots/human.py`` are the model: players by flag,
search statistics per move on request, re-prompt on bad input, the legal moves
on an empty line, a clean exit with a summary on quit or EOF, and on Ctrl-C
with exit status 130).  The board is drawn once a turn, cut to the terminal's
height; a finished game offers undo, a new game or quit.  While the AI
searches, the status line says whether it compiles or thinks, and what is
typed meanwhile is discarded."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
import threading
import time

from c4jax.cli.args import command_parser, search_options, seed_arg
from c4jax.cli.terminal import COMPILING, Clock, hard_exit, plain_interrupts, print_board, print_line, print_table, status
from c4jax.cli.from_args import make_game, network_options

PLAY_EPILOG = """\
examples:
  c4jax play                                  Connect 4, you move first, 1000 simulations
  c4jax play --first ai --show-search         the AI opens and shows its search per move
  c4jax play --game tictactoe --seed 7        tic-tac-toe (cells 1-9, row by row)
  c4jax play --rows 5 --cols 5 --connect 4 -n 400
  c4jax play --think 0.5                      the AI thinks half a second per move

at the prompt: a column (Connect 4, 1-based) or a cell 1-9 (tic-tac-toe);
  hint   what the AI would play here (a search; nothing is played)
  undo   take back your last move and the AI's answer
  board  the whole board (a board taller than the terminal shows its bottom rows)
  quit   stop (so do Ctrl-C and Ctrl-D); an empty line lists the legal moves
when the game is over: undo, new (another game) or quit
"""


def add_parser(sub, game, search_parent, common) -> None:
    """Adds the ``play`` command to the subparsers ``sub``."""
    p = command_parser(sub, "play", [game, search_parent(1000, net=True), common], PLAY_EPILOG,
                       help="play against the MCTS AI in the terminal",
                       description="Play Connect 4 or tic-tac-toe against MCTS in the terminal.")
    p.add_argument(
        "--first", choices=("human", "ai"), default="human",
        help="who moves first and plays X (default: human)",
    )
    p.add_argument(
        "--seed", type=seed_arg, default=None,
        help=f"random seed of the AI, {seed_arg.limits} (default: random, printed)",
    )
    p.add_argument(
        "--show-search", action="store_true",
        help="after each AI move (and hint), a table of every legal move: visit share, Q-value, "
        "what the solver proved (win/draw/loss), principal variation",
    )
    p.set_defaults(func=run)


class _AI:
    """The MCTS side of the terminal game: :func:`c4jax.mcts_player` (subtree
    reuse, a tree of fixed capacity ``2 N + 2`` kept between moves) on a
    batch of one game, its search compiled ahead of time once; with
    ``think`` seconds the anytime driver searches the same player's tree
    instead (compiled by a first search of a millisecond).  Compiling is
    apart from searching (:meth:`prepare`), so that the status line can say
    which one runs."""

    def __init__(self, game, num_simulations: int, seed: int, options: dict, think: float | None = None):
        import jax
        import jax.numpy as jnp

        from c4jax.tools.players import mcts_player
        from c4jax.search import run_mcts_anytime
        from c4jax.search.anytime import anytime_capacity

        self.game = game
        self.n = num_simulations
        self.think = think
        self.timing: dict = {}  # the last anytime search's compile_s and search_s
        self.capacity = anytime_capacity(think, 128) if think else 2 * num_simulations + 2
        self.player = mcts_player(num_simulations, capacity=self.capacity, **options)
        self.seed_key = jax.random.key(seed)
        self.key = self.seed_key
        self.games = 1

        def one(env):
            return jax.tree.map(lambda x: x[None], env)

        def search_key(key, ply, salt):
            return jax.random.fold_in(jax.random.fold_in(key, ply), salt)

        def search(key, ply, salt, env, tree):
            # split(k, 1): the key that one key k gives the game of a batch of one.
            keys = jax.random.split(search_key(key, ply, salt), 1)
            return self.player.search(keys, one(env), tree, *self.player.weights())[0]

        def think_search(key, ply, salt, env, tree, seconds=think):
            out, self.n = run_mcts_anytime(
                search_key(key, ply, salt), one(env), seconds, tree=tree, timing=self.timing, **options
            )
            return out

        # With a time budget, the anytime driver (compiled ahead of time by
        # itself) replaces the compiled search of a fixed simulation count.
        self._search = think_search if think else jax.jit(search)
        self._think_compile = functools.partial(think_search, seconds=0.001) if think else None
        self.ready = False  # the search is compiled
        self._cut = jax.jit(lambda tree, action: self.player.observe(tree, jnp.asarray(action, jnp.int32)[None]))
        self._fresh = jax.jit(lambda env: self.player.init(one(env)))
        self._legal = jax.jit(game.legal_action_mask)
        self.tree = None
        self._warm: dict[str, threading.Thread] = {}

    def reset(self, env) -> None:
        """Forget the tree: the next search starts from ``env`` afresh."""
        self.tree = self._fresh(env)

    def new_game(self, env) -> None:
        """A fresh tree at ``env`` and the searches' key of the next game
        (the first game's is the seed's own key)."""
        import jax

        self.key = jax.random.fold_in(self.seed_key, self.games)
        self.games += 1
        self.reset(env)

    def warm_up(self, env) -> None:
        """Compiles the search and the tree cut, each in a background thread
        (while the human thinks); :meth:`wait` joins them."""
        import jax

        tree = self.tree

        def search():
            if self._think_compile is not None:
                jax.block_until_ready(self._think_compile(self.key, 0, 2, env, tree).action)
            else:
                self._search = self._search.lower(self.key, 0, 2, env, tree).compile()
            self.ready = True

        def cut():
            jax.block_until_ready(self._cut(tree, 0))

        self._warm = {
            name: threading.Thread(target=fn, name=f"c4jax-warm-up-{name}", daemon=True)
            for name, fn in (("search", search), ("cut", cut))
        }
        for t in self._warm.values():
            t.start()

    def prepare(self, env) -> float:
        """Compiles the search from ``env`` (in a thread: Ctrl-C stops the
        wait at once) unless done, or waits for the warm-up's compile;
        returns the seconds it waited."""
        t0 = time.perf_counter()
        if not self.ready and "search" not in self._warm:
            self.warm_up(env)
        self.wait("search")
        return time.perf_counter() - t0

    def busy(self) -> bool:
        """Whether a warm-up thread is still running."""
        return any(t.is_alive() for t in self._warm.values())

    def wait(self, which: str | None = None) -> None:
        """Joins the warm-up of ``which`` ("search" or "cut"; default both)."""
        for name in [which] if which else list(self._warm):
            t = self._warm.get(name)
            if t is not None:
                t.join()  # an interrupted join leaves the thread listed (see busy)
                self._warm.pop(name, None)
                if name == "search":
                    self.ready = True  # or the warm-up failed: the search compiles itself

    def legal(self, env):
        import numpy as np

        return np.asarray(self._legal(env))

    def search(self, env, ply: int, hint: bool = False):
        """One search from ``env`` (the tree's root); the tree is kept only
        for a real move (:meth:`played` then cuts it).  Returns the
        :class:`c4jax.SearchOutput` (batch of one) as numpy arrays."""
        import jax

        self.wait("search")
        out = self._search(self.key, ply, 1 if hint else 0, env, self.tree)
        if not hint:
            self.tree = out.search_tree
        return jax.device_get(out)

    def played(self, action: int) -> None:
        """Keeps the subtree of the move just played (either side's)."""
        self.wait("cut")
        self.tree = self._cut(self.tree, action)


class _Game:
    """The state of a terminal game: the moves so far (0-based)."""

    def __init__(self, game, human: int):
        self.game = game
        self.human = human  # 0: the human is X (moves first), 1: O
        self.moves: list[int] = []
        self.env = game.env_reset()

    def push(self, action: int) -> None:
        self.moves.append(action)
        self.env = self.game.from_moves([m + 1 for m in self.moves])

    def pop(self, n: int) -> None:
        del self.moves[len(self.moves) - n:]
        self.env = self.game.from_moves([m + 1 for m in self.moves])

    @property
    def ply(self) -> int:
        return len(self.moves)

    @property
    def done(self) -> bool:
        return bool(self.env.done)

    @property
    def to_move(self) -> int:
        return self.ply % 2

    def undo_plies(self) -> int:
        """The plies that take back the human's last move and what followed
        it (the AI's answer, if any); 0 before the human's first move."""
        last = max((i for i in range(self.ply) if i % 2 == self.human), default=None)
        return 0 if last is None else self.ply - last

    def result(self) -> str:
        if not self.done:
            return f"undecided, {'XO'[self.to_move]} to move"
        w = int(self.env.winner)
        if w < 0:
            return "draw"
        return f"{'XO'[w]} wins ({'you' if w == self.human else 'the AI'})"

    def summary(self) -> str:
        """One line: the moves as ``c4jax analyze`` takes them and the result."""
        from c4jax.present.analysis import moves_text

        moves = moves_text(self.game, self.moves) or "none"
        n = self.ply
        head, res = ("Game over", "result") if self.done else ("Stopped", "result so far")
        return f"{head}: {n} move{'s' if n != 1 else ''} played ({moves}); {res}: {self.result()}."


def game_name(game) -> str:
    """The game, with its board's size in columns and rows where it has one
    ("Connect 4 on 7 columns x 6 rows", "tic-tac-toe")."""
    p = getattr(game, "params", {})
    if {"rows", "cols", "connect"} <= set(p):
        return f"Connect {p['connect']} on {p['cols']} columns x {p['rows']} rows"
    return getattr(game, "title", game.name)


def _search_title(what: str, out) -> str:
    from c4jax.present.analysis import root_value_text

    return f"{what}: {int(out.visit_counts.sum()):,} root visits, {root_value_text(out)}"


# The lines of a turn besides the board: the line typed, the AI's move, the prompt.
_TURN_LINES = 3
_SEE_ALL = "; type board to see them all"


def _show_board(con, game, env, below: int = 0) -> None:
    """Draws the board so that it, ``below`` more lines and a turn's other
    lines fit the terminal (its bottom rows kept; the whole board in a pipe)."""
    limit = max(con.height - _TURN_LINES - below, 4) if con.is_terminal else None
    print_board(con, game, env, max_lines=limit, see_all=_SEE_ALL)


_PENDING = bytearray()  # bytes read from stdin but not yet returned as a line


def _read_move(prompt: str) -> str:
    """One line from the player.  On POSIX the wait polls stdin with
    ``select`` (reading the file descriptor itself, so no line hides in a
    Python buffer) instead of blocking in ``input()``: the kernel may deliver
    Ctrl-C's SIGINT to one of JAX's or the warm-up's threads, and a main
    thread blocked in a read would then never see it.  Polling runs Python
    code in the main thread every 0.1 s, so the KeyboardInterrupt comes at
    once.  Raises ``EOFError`` at end of input."""
    import select

    try:
        fileno = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):
        fileno = None
    if fileno is None or os.name != "posix":
        return input(prompt)
    sys.stdout.write(prompt)
    sys.stdout.flush()
    while b"\n" not in _PENDING:
        ready, _, _ = select.select([fileno], [], [], 0.1)
        if not ready:
            continue
        chunk = os.read(fileno, 4096)
        if not chunk:  # end of input
            if not _PENDING:
                raise EOFError
            _PENDING.extend(b"\n")
        _PENDING.extend(chunk)
    line, _, rest = bytes(_PENDING).partition(b"\n")
    _PENDING[:] = rest
    return line.decode("utf-8", errors="replace").rstrip("\r")


@contextlib.contextmanager
def _typing_discarded():
    """While the block runs (the AI compiles or searches), what is typed on
    a terminal is not echoed (it would break the status line) and, at the
    end, dropped from the terminal's input buffer (with any line read but
    not yet used), so that it is not taken for the next move.  Input that is
    not a terminal (a script's moves) is left alone."""
    try:
        import termios

        fileno = sys.stdin.fileno()
        saved = termios.tcgetattr(fileno) if os.isatty(fileno) else None
    except (AttributeError, ImportError, OSError, ValueError):
        saved = None
    if saved is None:
        yield
        return
    quiet = list(saved)
    quiet[3] &= ~termios.ECHO  # the local modes
    with contextlib.suppress(OSError):
        termios.tcsetattr(fileno, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            termios.tcsetattr(fileno, termios.TCSANOW, saved)
            termios.tcflush(fileno, termios.TCIFLUSH)
        _PENDING.clear()


def _search_with_status(ai, state, args, hint: bool = False):
    """The AI's search (or a hint's) under a status line that says
    "compiling" while the search compiles, then "thinking" with its budget
    (a clock of the seconds, or the simulations); what is typed meanwhile is
    dropped (:func:`_typing_discarded`).  Returns ``(output, seconds compiling, seconds searching)``."""
    who = "searching for a hint" if hint else "the AI is thinking"

    def thinking():
        return Clock(who, args.think) if args.think else f"{who} ({args.simulations:,} simulations)..."

    with _typing_discarded(), status(thinking() if ai.ready else f"{COMPILING}...") as line:
        compiling = ai.prepare(state.env)
        line.update(thinking())
        t0 = time.perf_counter()
        out = ai.search(state.env, state.ply, hint=hint)
        searching = time.perf_counter() - t0
    if args.think and ai.timing:
        # The search's own time; anything compiled inside it said apart.
        compiling += searching - ai.timing["search_s"]
        searching = ai.timing["search_s"]
    return out, compiling, searching


def _legal_text(game, legal) -> str:
    import numpy as np

    return f"Legal moves: {' '.join(str(int(a) + 1) for a in np.flatnonzero(legal))}"


_QUIT = ("q", "quit", "exit")


def _read_command(con, prompt: str) -> str | None:
    """The player's next line, or ``None`` to stop: a quit command or the
    end of input (after a newline, so the summary starts on its own line)."""
    try:
        text = _read_move(prompt)
    except EOFError:
        con.print()
        return None
    return None if text.strip().lower() in _QUIT else text


def run(args, con, t_start: float) -> int:
    # The library is imported when a command runs: 'c4jax --help' and usage errors start without JAX.
    from c4jax.present.analysis import fmt_q, move_label, search_table, shown_q

    game = make_game(args)
    network = network_options(args, game)
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(3), "little")
    human = 0 if args.first == "human" else 1
    state = _Game(game, human)
    label = move_label(game)
    n_actions = game.num_actions
    side = f"You are [bold]{'XO'[human]}[/bold] and move {'first' if human == 0 else 'second'}."
    print_line(con, f"[bold]c4jax play[/bold]: {game_name(game)}. {side}")
    per_move = f"{args.think:g} s of thinking" if args.think else f"{args.simulations:,} simulations"
    with_net = f" with the network of {args.net}" if network else ""
    print_line(con, f"The AI is MCTS{with_net}, {per_move} per move (seed {seed}).", markup=not network)
    print_line(
        con,
        f"Type a {label} 1-{n_actions}, or [bold]hint[/bold], [bold]undo[/bold], [bold]board[/bold], "
        "[bold]quit[/bold] (an empty line lists the legal moves)."
    )
    ai = None
    first_ai_move = True
    fresh = True  # the position changed since the board was last drawn
    summarized = False  # the game's end and summary are printed

    def undo() -> None:
        nonlocal fresh, summarized
        n = state.undo_plies()
        if not n:
            print_line(con, "Nothing to undo.")
            return
        state.pop(n)
        ai.reset(state.env)
        print_line(con, "Took back your last move and the AI's." if n > 1 else "Took back your last move.")
        fresh, summarized = True, False

    try:
        with plain_interrupts():
            with status("starting the AI..."):
                ai = _AI(game, args.simulations, seed, {**search_options(args), **network}, think=args.think)
                ai.reset(state.env)
            if human == 0:
                ai.warm_up(state.env)
            while True:
                if state.done:
                    if not summarized:
                        w = int(state.env.winner)
                        msg = "Nobody wins." if w < 0 else ("You win!" if w == human else "The AI wins.")
                        summary = state.summary()
                        _show_board(con, game, state.env, below=1 + -(-len(summary) // con.width))
                        print_line(con, f"[bold]{msg}[/bold]")
                        print_line(con, summary, markup=False)
                        summarized = True
                    text = _read_command(con, "What now? undo, new (another game) or quit [undo/new/quit]: ")
                    if text is None:
                        break
                    cmd = text.strip().lower()
                    if cmd == "undo":
                        undo()
                    elif cmd in ("new", "n"):
                        state = _Game(game, human)
                        ai.new_game(state.env)
                        fresh = True
                        summarized = False
                        print_line(con, f"[bold]New game[/bold]: {side}")
                    elif cmd == "board":
                        print_board(con, game, state.env)
                    else:
                        shown = text.strip() if len(text.strip()) <= 20 else text.strip()[:20] + "..."
                        print_line(con, "The game is over: type undo, new or quit"
                                   + (f" ({shown!r} is none of them)." if shown else "."), style="red", markup=False)
                    continue
                legal = ai.legal(state.env)
                if state.to_move != human:
                    out, compiling, dt = _search_with_status(ai, state, args)
                    action = int(out.action[0])
                    if args.show_search:
                        print_table(con, search_table(out, state.env, _search_title("AI search", out)))
                    since = f", after {compiling:.1f} s of compiling" if compiling > 0.5 else ""
                    if first_ai_move:
                        since += f", {time.perf_counter() - t_start:.1f} s after start"
                    print_line(
                        con,
                        f"AI ({'XO'[state.to_move]}) plays {label} [bold]{action + 1}[/bold]"
                        f"  ({ai.n:,} simulations in {dt:.2f} s{since})"
                    )
                    first_ai_move = False
                    ai.played(action)
                    state.push(action)
                    fresh = True
                    continue
                if fresh:  # once per turn, before the prompt
                    _show_board(con, game, state.env)
                    fresh = False
                text = _read_command(con, f"Your move ({'XO'[human]}), {label} 1-{n_actions} [hint/undo/quit]: ")
                if text is None:
                    break
                cmd = text.strip().lower()
                if cmd in ("help", "h", "?"):
                    print_line(con, f"Type a {label} 1-{n_actions}; hint: what the AI would play; undo: take back "
                               "your last move and the AI's; board: the whole board; quit: stop.")
                    print_line(con, _legal_text(game, legal))
                    continue
                if cmd == "hint":
                    out, _, _ = _search_with_status(ai, state, args, hint=True)
                    a = int(out.action[0])
                    share = float(out.action_weights[0, a])
                    q = shown_q(float(out.qvalues[0, a]), float(out.qvalue_lower[0, a]), float(out.qvalue_upper[0, a]))
                    if args.show_search:
                        print_table(con, search_table(out, state.env, _search_title("Hint search", out)))
                    print_line(
                        con,
                        f"Hint: the AI would play {label} [bold]{a + 1}[/bold] "
                        f"(visit share {100 * share:.0f}%, Q {fmt_q(q)})"
                    )
                    continue
                if cmd == "undo":
                    undo()
                    continue
                if cmd == "board":
                    print_board(con, game, state.env)
                    continue
                error = None
                if not cmd:
                    error = f"Type a {label} number 1-{n_actions}, or hint, undo, board, quit."
                elif not re.fullmatch(r"[+-]?[0-9]{1,9}", cmd, flags=re.ASCII):
                    shown = text.strip() if len(text.strip()) <= 20 else text.strip()[:20] + "..."
                    error = f"{shown!r} is not a move: type a {label} number 1-{n_actions}."
                else:
                    m = int(cmd)
                    if not 1 <= m <= n_actions:
                        error = f"There is no {label} {m}: {label}s are 1-{n_actions}."
                    elif not legal[m - 1]:
                        error = f"Column {m} is full." if label == "column" else f"Cell {m} is taken."
                if error is not None:
                    print_line(con, error, style="red", markup=False)
                    print_line(con, _legal_text(game, legal))
                    continue
                action = int(cmd) - 1
                ai.played(action)
                state.push(action)
                fresh = True
    except KeyboardInterrupt:
        con.print()
        interrupted = True
    else:
        interrupted = False
    if not summarized or interrupted:
        print_line(con, state.summary(), markup=False)
    if interrupted or (ai is not None and ai.busy()):
        # A search may still be running in XLA's threads (a warm-up, or the
        # AI's own move that Ctrl-C interrupted): leave now rather than wait
        # for it, and without the interpreter's shutdown, which aborts
        # (SIGABRT) while XLA threads are running.  Ctrl-C: 130, as every
        # command (and a shell) says of a process SIGINT stopped.
        hard_exit(130 if interrupted else 0)
    return 0
