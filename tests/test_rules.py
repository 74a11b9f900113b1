"""Edge cases of the rules, one test each: wins with the last empty cell, lines
along every edge, illegal moves (huge integers included), draws, finished
games, rollouts from finished games, the actions and states the rules refuse
(non-integer actions, another game's Env, Env fields of other dtypes or
shapes), board-size limits, and both sides' winning moves in one call.  Scripted positions are move lists (1-based
columns / cells) checked move by move against the reference rules."""

from __future__ import annotations

import itertools

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import c4jax
from c4jax.games import connect4, tictactoe
from c4jax.games.env import Env
from c4jax.present.boards import render

from reference_games import MARKS, Connect4Ref, RefState, reference_for
from test_games import batch, batched, jitted, row
from marks import slow_unless


def moves_of(text: str) -> list[int]:
    return [int(ch) - 1 for ch in text]


def play(game, actions):
    fns = jitted(game)
    env = game.env_reset()
    out = []
    for a in actions:
        env, r, d = fns["step"](env, jnp.int32(a))
        out.append((env, float(r), bool(d)))
    return out


def stones_from_grid(game, grid) -> np.ndarray:
    """``uint32[2, W]`` for a reference grid (row 0 = top), from the documented
    bit layout (not from moves)."""
    rows, cols = game.rows, game.cols
    words = 1 if game.name == "tictactoe" else cols * (1 if rows <= 32 else 2)
    stones = np.zeros((2, words), np.uint32)
    for r in range(rows):
        for c in range(cols):
            if grid[r][c] is not None:
                p = MARKS.index(grid[r][c])
                if game.name == "tictactoe":
                    stones[p, 0] |= np.uint32(1 << (3 * r + c))
                else:
                    word, h = divmod(rows - 1 - r, 32)  # rows 32.. in word cols + c
                    stones[p, word * cols + c] |= np.uint32(1 << h)
    return stones


def envs_from_grids(game, grids, to_move) -> Env:
    """A batch of running games (or one, for one grid and an int ``to_move``)."""
    one = isinstance(to_move, int)
    grids, to_move = ([grids], [to_move]) if one else (grids, to_move)
    stones = np.stack([stones_from_grid(game, g) for g in grids])
    ply = np.array([sum(v is not None for r in g for v in r) for g in grids], np.int32)
    n = len(grids)
    env = Env(
        stones=jnp.asarray(stones),
        to_move=jnp.asarray(np.asarray(to_move, np.int32)),
        ply=jnp.asarray(ply),
        done=jnp.zeros(n, jnp.bool_),
        winner=jnp.full(n, -1, jnp.int32),
        last_action=jnp.full(n, -1, jnp.int32),
        game=game,
    )
    return row(env, 0) if one else env


# --- wins with the last empty cell -------------------------------------------------

# From a random search with the reference rules: 41 stones without a line,
# then O's 42nd stone, into the last empty cell, makes four.
C4_WIN_ON_42 = "664757712251566334353152625464771722133144"
C4_DRAW_42 = "562544631751167467766154327371213353254242"
TTT_WIN_ON_9 = "123456879"  # X: 1, 3, 5, 8, then 9 (diagonal 1-5-9)
TTT_DRAW_9 = "123457698"


@pytest.mark.parametrize(
    "game_fn, moves",
    [(connect4.make, C4_WIN_ON_42), (lambda: tictactoe.GAME, TTT_WIN_ON_9)],
    ids=["connect4_42nd", "tictactoe_9th"],
)
def test_win_with_the_last_empty_cell_is_a_win(game_fn, moves):
    game = game_fn()
    ref = reference_for(game)
    actions = moves_of(moves)
    assert len(actions) == game.max_plies
    s = ref.reset()
    steps = play(game, actions)
    for i, (a, (env, r, d)) in enumerate(zip(actions, steps)):
        s, r_ref, d_ref = ref.step(s, a)
        assert (r, d) == (r_ref, d_ref) == ((0.0, False) if i < len(actions) - 1 else (1.0, True))
        if i == len(actions) - 2:
            wins = np.asarray(jitted(game)["wins"](env))
            assert wins[actions[-1]] and wins.sum() == 1  # the last cell wins
            assert np.asarray(jitted(game)["legal"](env)).sum() == 1
    env = steps[-1][0]
    mover = (len(actions) - 1) % 2
    assert int(env.winner) == mover == s.winner
    assert int(env.ply) == game.max_plies and bool(env.done)
    assert render(game, env).splitlines()[-1] == f"{MARKS[mover]} wins"
    chex.assert_trees_all_equal(game.from_moves(moves), env, strict=True)


@pytest.mark.parametrize(
    "game_fn, moves",
    [(connect4.make, C4_DRAW_42), (lambda: tictactoe.GAME, TTT_DRAW_9)],
    ids=["connect4", "tictactoe"],
)
def test_full_board_draw(game_fn, moves):
    game = game_fn()
    actions = moves_of(moves)
    steps = play(game, actions)
    assert all((r, d) == (0.0, False) for _, r, d in steps[:-1])
    env, r, d = steps[-1]
    assert (r, d) == (0.0, True)
    assert int(env.winner) == -1 and int(env.ply) == game.max_plies
    assert not np.asarray(jitted(game)["legal"](env)).any()
    assert np.asarray(jitted(game)["board"](env)).all()  # every cell filled
    assert reference_for(game).play(actions).winner == -1
    assert render(game, env).splitlines()[-1] == "Draw"
    chex.assert_trees_all_equal(game.from_moves(moves), env, strict=True)


# --- lines along every edge: scripted games on the standard board --------------------

# (name, moves, the line's cells as (row from the bottom, column)); the last
# move makes the line.  From a constrained random search with the reference.
EDGE_GAMES = [
    ("vertical, left edge, bottom", "75157436261236736264151", [(0, 0), (1, 0), (2, 0), (3, 0)]),
    ("vertical, right edge, top", "74713447335257135767", [(2, 6), (3, 6), (4, 6), (5, 6)]),
    ("horizontal, bottom edge, left", "76477637261", [(0, 0), (0, 1), (0, 2), (0, 3)]),
    ("horizontal, top edge, right", "751167467766154726122225136152735454434",
     [(5, 3), (5, 4), (5, 5), (5, 6)]),
    ("diagonal /, bottom-left corner", "767553372341615413725235165474", [(0, 0), (1, 1), (2, 2), (3, 3)]),
    ("diagonal /, top-right corner", "751167467766672612222513514373524", [(2, 3), (3, 4), (4, 5), (5, 6)]),
    ("diagonal \\, top-left corner", "74741447734352523354733217216226661161",
     [(5, 0), (4, 1), (3, 2), (2, 3)]),
    ("diagonal \\, bottom-right corner", "741354433627414773141577635", [(3, 3), (2, 4), (1, 5), (0, 6)]),
]


@pytest.mark.parametrize("name, moves, line", EDGE_GAMES, ids=[g[0] for g in EDGE_GAMES])
def test_edge_lines_in_real_games(name, moves, line):
    game, ref = connect4.make(), Connect4Ref()
    actions = moves_of(moves)
    mover = (len(actions) - 1) % 2
    before = game.from_moves(moves[:-1])
    assert not bool(before.done)
    # winning_moves sees the line coming, and agrees with the reference.
    s_before = ref.play(actions[:-1])
    wins = np.asarray(jitted(game)["wins"](before))
    assert wins[actions[-1]] and wins.tolist() == ref.winning_moves(s_before)
    env, reward, done = jitted(game)["step"](before, jnp.int32(actions[-1]))
    assert (float(reward), bool(done), int(env.winner)) == (1.0, True, mover)
    board = np.asarray(jitted(game)["board"](env))
    for h, c in line:  # the line is the mover's stones (row 0 of the board = top)
        assert board[game.rows - 1 - h, c] == mover + 1
    # The last stone is part of the line, and the line touches an edge.
    column = np.asarray(before.stones)[:, actions[-1]]
    height = bin(int(column[0] | column[1])).count("1")  # stones in the column before
    assert (height, actions[-1]) in line
    assert any(h in (0, game.rows - 1) or c in (0, game.cols - 1) for h, c in line)
    s = ref.play(actions)
    assert s.winner == mover and ref.board(s) == board.tolist()


# --- every line along an edge, on many sizes: positions built bit by bit ---------------

DIRECTIONS = {"vertical": (1, 0), "horizontal": (0, 1), "diagonal /": (1, 1), "diagonal \\": (1, -1)}


def edge_lines(rows, cols, k, corners_only=False):
    """Every line of ``k`` cells ``(height, column)`` touching an edge (or, with
    ``corners_only``, two edges), with its direction and the edges it touches.
    ``corners_only="words"``: instead, every line with cells on both sides of
    the boundary between a tall column's two words (heights 31 and 32)."""
    for name, (dh, dc) in DIRECTIONS.items():
        for h0, c0 in itertools.product(range(rows), range(cols)):
            cells = [(h0 + i * dh, c0 + i * dc) for i in range(k)]
            if not all(0 <= h < rows and 0 <= c < cols for h, c in cells):
                continue
            edges = set()
            for h, c in cells:
                edges |= {e for e, hit in (("bottom", h == 0), ("top", h == rows - 1),
                                           ("left", c == 0), ("right", c == cols - 1)) if hit}
            if corners_only == "words":
                heights = {h for h, _ in cells}
                if {31, 32} <= heights:
                    yield name, cells, edges
            elif len(edges) >= (2 if corners_only else 1):
                yield name, cells, edges


def _filler(kind: int, h: int, c: int) -> int:
    """Player of a filler stone: patterns whose own runs are at most 2 long."""
    if kind < 2:
        return (h // 2 + c + kind) % 2
    return ((h + 1) // 2 + c + kind) % 2


def line_positions(ref: Connect4Ref, corners_only=False):
    """For every edge line, every cell of it that can be played last (the top
    one for a vertical line) and both players: a position where that player,
    to move, completes the line by playing that cell; the stones below are
    filler that makes no line.  Yields (grid, mover, column, direction, edges)."""
    rows = ref.rows
    for name, cells, edges in edge_lines(ref.rows, ref.cols, ref.connect, corners_only):
        lasts = [max(cells)] if name == "vertical" else cells
        for (lh, lc), mover in itertools.product(lasts, (0, 1)):
            for kind in range(4):
                grid = [[None] * ref.cols for _ in range(rows)]
                for h, c in cells:
                    if (h, c) != (lh, lc):
                        grid[rows - 1 - h][c] = MARKS[mover]
                for c in {c for _, c in cells}:
                    top = max(h for h, cc in cells if cc == c)
                    for h in range(top + 1):
                        if grid[rows - 1 - h][c] is None and (h, c) != (lh, lc) and not (c == lc and h > lh):
                            grid[rows - 1 - h][c] = MARKS[_filler(kind, h, c)]
                grid_t = tuple(tuple(r) for r in grid)
                occupied = [(r, c) for r in range(rows) for c in range(ref.cols) if grid_t[r][c]]
                if any(ref.line_through(grid_t, r, c) for r, c in occupied):
                    continue  # this filler made a line already: try the next
                assert ref.target_cell(grid_t, lc) == (rows - 1 - lh, lc)
                yield grid_t, mover, lc, name, edges
                break
            else:
                raise AssertionError(f"no filler for the line {cells} last {(lh, lc)}")


SWEEP_SIZES = [
    ((6, 7, 4), False),
    ((4, 4, 3), False),
    ((6, 7, 5), False),
    ((32, 5, 4), False),
    ((7, 40, 4), False),
    ((14, 20, 6), False),
    ((32, 64, 4), True),  # the largest one-word board: lines in the corners
    ((3, 3, 3), False),  # the smallest
    # Two words per column (33..64 rows): every edge, then every line across
    # the words' boundary (row 32 from the bottom is bit 0 of the second word).
    ((40, 7, 4), False),
    ((33, 7, 5), False),
    ((19, 15, 4), False),
    ((64, 64, 4), True),  # the largest board: lines in the corners
    ((40, 7, 4), "words"),
    ((33, 9, 3), "words"),
    ((64, 12, 6), "words"),
    ((64, 5, 33), "words"),  # lines longer than a word
]


@pytest.mark.parametrize(
    "size, corners_only", slow_unless(SWEEP_SIZES, lambda case: case[0] in ((6, 7, 4), (3, 3, 3), (32, 64, 4), (40, 7, 4))),
    ids=[f"{r}x{c}_k{k}" + ("_words" if w == "words" else "") for (r, c, k), w in SWEEP_SIZES],
)
def test_every_edge_line_is_detected(size, corners_only):
    """Lines along every edge, in all four directions, completed by any of
    their cells: ``env_step`` gives +1 and ``winning_moves`` has the move (and
    equals the reference's set), in one ``jit(vmap)`` batch per board."""
    rows, cols, k = size
    game, ref = connect4.make(rows, cols, k), Connect4Ref(rows, cols, k)
    cases = list(line_positions(ref, corners_only))
    seen = {(name, e) for *_, name, edges in cases for e in edges}
    exists = {"vertical": k <= rows, "horizontal": k <= cols}
    exists["diagonal /"] = exists["diagonal \\"] = k <= rows and k <= cols
    if corners_only == "words":  # every direction but the horizontal crosses the words
        assert {name for *_, name, _ in cases} == {"vertical"} | (
            {"diagonal /", "diagonal \\"} if exists["diagonal /"] else set()
        )
    else:
        for name in DIRECTIONS:  # each direction that fits touches all four edges
            for e in ("bottom", "top", "left", "right"):
                assert ((name, e) in seen) == exists[name], (name, e)
    envs = envs_from_grids(game, [g for g, *_ in cases], [m for _, m, *_ in cases])
    actions = jnp.asarray([c for _, _, c, *_ in cases], jnp.int32)
    fns = batched(game)
    new, reward, done = jax.device_get(fns["step"](envs, actions))
    wins = np.asarray(fns["wins"](envs))
    movers = np.array([m for _, m, *_ in cases])
    np.testing.assert_array_equal(reward, 1.0)
    assert done.all()
    np.testing.assert_array_equal(new.winner, movers)
    assert wins[np.arange(len(cases)), np.asarray(actions)].all()
    for i, (grid, mover, col, name, _) in enumerate(cases):
        s = RefState(grid, mover, sum(v is not None for r in grid for v in r))
        assert wins[i].tolist() == ref.winning_moves(s), (name, grid)


# --- illegal moves ------------------------------------------------------------------------


def _assert_illegal(game, env, action, new, reward, done):
    mover = int(env.to_move)
    assert (float(reward), bool(done)) == (-1.0, True)
    assert int(new.winner) == 1 - mover  # the opponent wins
    np.testing.assert_array_equal(np.asarray(new.stones), np.asarray(env.stones))  # board unchanged
    assert int(new.ply) == int(env.ply)
    assert int(new.to_move) == 1 - mover and int(new.last_action) == int(np.int32(action))
    assert not np.asarray(jitted(game)["legal"](new)).any()


@pytest.mark.parametrize("moves, column", [("444444", 4), ("1111112", 1)], ids=["X_into_full", "O_into_full"])
def test_full_column_is_illegal(moves, column):
    game, ref = connect4.make(), Connect4Ref()
    env = game.from_moves(moves)
    full = column - 1
    assert not np.asarray(jitted(game)["legal"](env))[full]
    new, reward, done = jitted(game)["step"](env, jnp.int32(full))
    _assert_illegal(game, env, full, new, reward, done)
    out_eager = game.env_step(env, full)
    chex.assert_trees_all_equal(out_eager, (new, reward, done), strict=True)
    s, r, d = ref.step(ref.play(moves_of(moves)), full)
    assert (r, d, s.winner) == (-1, True, int(new.winner))


def test_occupied_cell_is_illegal():
    game = tictactoe.GAME
    env = game.from_moves("51")
    for cell in (4, 0):
        new, reward, done = jitted(game)["step"](env, jnp.int32(cell))
        _assert_illegal(game, env, cell, new, reward, done)


@pytest.mark.parametrize("game_fn", [connect4.make, lambda: connect4.make(7, 40, 4), lambda: tictactoe.GAME],
                         ids=["connect4", "c4_7x40", "tictactoe"])
def test_illegal_actions_under_jit_and_vmap(game_fn):
    game = game_fn()
    a = game.num_actions
    # Positions: the start, a position with a full column / used cell.
    start = game.env_reset()
    if game.name == "tictactoe":
        mid, blocked = game.from_moves("59"), 4
    else:
        mid, blocked = game.from_moves([2] * game.rows), 1
    actions = [-1, -5, a, a + 1, np.iinfo(np.int32).max, np.iinfo(np.int32).min]
    cases = [(start, x) for x in actions] + [(mid, x) for x in actions + [blocked]]
    for env, x in cases:
        new, reward, done = jitted(game)["step"](env, jnp.int32(x))
        _assert_illegal(game, env, x, new, reward, done)
    envs = jax.tree.map(lambda *xs: jnp.stack(xs), *[e for e, _ in cases])
    acts = jnp.asarray([x for _, x in cases], jnp.int32)
    new_b, reward_b, done_b = batched(game)["step"](envs, acts)
    np.testing.assert_array_equal(np.asarray(reward_b), -1.0)
    assert np.asarray(done_b).all()
    for i, (env, x) in enumerate(cases):
        chex.assert_trees_all_equal(
            row((new_b, reward_b, done_b), i), jitted(game)["step"](env, jnp.int32(x)), strict=True
        )


@pytest.mark.parametrize("action", [2**33 + 2, np.int64(2**33 + 2), -(2**40), np.uint32(2**32 - 1)])
def test_huge_integers_are_illegal_moves_not_wrapped(action):
    # An integer outside int32 is an illegal move (the mover loses, the board
    # is unchanged), not wrapped to a legal column: 2**33 + 2 is not column 3.
    env = connect4.from_moves("4453")
    new, reward, done = connect4.env_step(env, action)
    assert float(reward) == -1.0 and bool(done) and int(new.winner) == 1 - int(env.to_move)
    np.testing.assert_array_equal(np.asarray(new.stones), np.asarray(env.stones))


# --- finished games stay finished -----------------------------------------------------------


def finished_positions():
    c4, ttt = connect4.make(), tictactoe.GAME
    c4_win = c4.from_moves("4455667")  # X wins
    c4_draw = c4.from_moves(C4_DRAW_42)
    c4_illegal = jitted(c4)["step"](c4.from_moves("444444"), jnp.int32(3))[0]  # X's illegal move
    ttt_win = ttt.from_moves("14253")
    ttt_draw = ttt.from_moves(TTT_DRAW_9)
    ttt_illegal = jitted(ttt)["step"](ttt.from_moves("5"), jnp.int32(4))[0]  # O's illegal move
    return [
        (c4, c4_win, -1.0), (c4, c4_draw, 0.0), (c4, c4_illegal, 1.0),
        (ttt, ttt_win, -1.0), (ttt, ttt_draw, 0.0), (ttt, ttt_illegal, 1.0),
    ]


FINISHED_IDS = ["c4_win", "c4_draw", "c4_illegal", "ttt_win", "ttt_draw", "ttt_illegal"]


@pytest.mark.parametrize("which", range(6), ids=FINISHED_IDS)
def test_stepping_a_finished_game_changes_nothing(which):
    game, env, _ = finished_positions()[which]
    assert bool(env.done)
    a = game.num_actions
    actions = [0, a - 1, a // 2, -1, a, 12345]
    for x in actions:
        out = game.env_step(env, x)  # eager
        chex.assert_trees_all_equal(out, (env, jnp.float32(0.0), jnp.bool_(True)), strict=True)
        chex.assert_trees_all_equal(jitted(game)["step"](env, jnp.int32(x)), out, strict=True)
    envs = batch(env, len(actions))
    new_b, reward_b, done_b = batched(game)["step"](envs, jnp.asarray(actions, jnp.int32))
    chex.assert_trees_all_equal(new_b, envs, strict=True)
    np.testing.assert_array_equal(np.asarray(reward_b), 0.0)
    assert np.asarray(done_b).all()
    assert not np.asarray(batched(game)["legal"](envs)).any()
    assert not np.asarray(batched(game)["wins"](envs)).any()


@pytest.mark.parametrize("which", range(6), ids=FINISHED_IDS)
def test_rollout_of_a_finished_game(which):
    """-1 after a win (the player to move lost), 0 after a draw, +1 after the
    opponent's illegal move; the same for the heuristic rollout and under vmap."""
    game, env, expected = finished_positions()[which]
    fns, bfns = jitted(game), batched(game)
    key = jax.random.key(which)
    assert float(fns["rollout"](key, env)) == expected
    assert float(fns["heuristic"](key, env)) == expected
    keys = jax.random.split(key, 8)
    np.testing.assert_array_equal(np.asarray(bfns["rollout"](keys, batch(env, 8))), expected)
    np.testing.assert_array_equal(np.asarray(bfns["heuristic"](keys, batch(env, 8))), expected)


# --- actions and states the rules refuse ----------------------------------------------------


@pytest.mark.parametrize("action", [3.7, -0.5, float("nan"), "3", True, np.float32(2.0)])
def test_non_integer_actions_are_rejected(action):
    with pytest.raises(ValueError, match="action must be an integer"):
        connect4.env_step(connect4.from_moves("4453"), action)
    with pytest.raises(ValueError, match="action must be an integer"):
        tictactoe.env_step(tictactoe.from_moves("5"), action)


def test_non_integer_action_under_jit_is_rejected_at_trace_time():
    with pytest.raises(ValueError, match="action must be an integer"):
        jax.jit(connect4.env_step)(connect4.from_moves("4453"), jnp.float32(3.9))


def test_module_functions_refuse_an_env_of_another_game():
    five = connect4.make(6, 7, 5).from_moves("121212")
    for fn in (connect4.legal_action_mask, connect4.winning_moves, connect4.board_array):
        with pytest.raises(ValueError, match="connect=5"):
            fn(five)
    with pytest.raises(ValueError, match="connect=5"):
        connect4.env_step(five, 0)
    with pytest.raises(ValueError, match="TicTacToe"):
        connect4.rollout(jax.random.key(0), tictactoe.from_moves("15"))
    with pytest.raises(ValueError, match="Connect4"):
        tictactoe.legal_action_mask(connect4.from_moves("4453"))
    # Its own game plays connect five: four in a column is not a win.
    _, reward, done = five.game.env_step(five, 0)
    assert float(reward) == 0.0 and not bool(done)


def test_env_fields_with_other_dtypes_or_shapes_are_value_errors():
    """An Env built by hand with float or int16 fields, or with fields of two
    batch sizes, is a ValueError naming the field and the dtype and shape it
    must have, from the search and from the rules alike."""
    env = connect4.from_moves("44")
    as_float = jax.tree.map(lambda x: x.astype(np.float32), env)
    with pytest.raises(ValueError, match=r"Env.stones must be uint32\[2, 7\].*got float32\[2, 7\]"):
        c4jax.run_mcts(jax.random.key(0), as_float, 8)
    as_int16 = jax.tree.map(lambda x: x.astype(np.int16), env)
    with pytest.raises(ValueError, match=r"Env.stones must be uint32"):
        connect4.env_step(as_int16, 0)
    batch = jax.tree.map(lambda x: np.stack([x] * 3), env)
    ragged = c4jax.Env(**{**vars(batch), "stones": batch.stones[:2]})
    with pytest.raises(ValueError, match=r"Env.stones must be uint32\[3, 2, 7\].*got uint32\[2, 2, 7\]"):
        c4jax.run_mcts(jax.random.key(0), ragged, 8)
    with pytest.raises(ValueError, match=r"Env.done must be bool\[\]"):
        connect4.legal_action_mask(c4jax.Env(**{**vars(env), "done": np.int32(0)}))
    tall = connect4.make(40, 7).env_reset()  # two words per column
    assert tall.stones.shape == (2, 14)
    with pytest.raises(ValueError, match=r"Env.stones must be uint32\[2, 14\]"):
        connect4.make(40, 7).env_step(c4jax.Env(**{**vars(tall), "stones": tall.stones[:, :7]}), 0)


# --- board sizes ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, words",
    [
        ((2, 7, 4), "3..64"),
        ((65, 7, 4), "3..64"),
        ((0, 7, 4), "3..64"),
        ((6, 2, 4), "3..64"),
        ((6, 65, 4), "3..64"),
        ((6, 7, 2), "3..7"),
        ((6, 7, 8), "3..7"),
        ((3, 3, 4), "3..3"),
        ((32, 5, 33), "3..32"),
        ((64, 5, 65), "3..64"),
        ((6.0, 7, 4), "3..64"),
        ((6, "7", 4), "3..64"),
        ((6, 7, True), "3..7"),
        ((6, 7, 4.0), "3..7"),
    ],
)
def test_make_rejects_sizes_outside_the_range(args, words):
    with pytest.raises(ValueError) as info:
        connect4.make(*args)
    assert words in str(info.value)


@pytest.mark.parametrize(
    "args",
    [(3, 3, 3), (32, 64, 64), (32, 3, 32), (3, 64, 64), (6, 7, 7), (np.int64(6), 7, 4), (64, 64, 64),
     (64, 3, 64), (33, 3, 4)],
)
def test_make_accepts_the_limits(args):
    game = connect4.make(*args)
    assert (game.rows, game.cols, game.connect) == tuple(int(x) for x in args)
    assert game.num_actions == args[1] and game.max_plies == args[0] * args[1]
    assert connect4.make(*args) is game


def test_board_sizes_are_written_with_both_names():
    """A board's size names its columns and rows (``make(rows, cols)``
    takes rows first; "8x9" alone does not say which is which)."""
    assert connect4.make(8, 9, 5).title == "Connect 5 on 9 columns x 8 rows"
    assert connect4.make(40, 7).title == "Connect 4 on 7 columns x 40 rows"
    assert connect4.make(6, 7, 4).title == "Connect 4"
    with pytest.raises(ValueError, match=r"in 3\.\.9 \(max\(rows, cols\) for rows=8, cols=9\); got 10"):
        connect4.make(8, 9, 10)
    with pytest.raises(ValueError, match=r"^a board of 12 columns \(more than 9\) takes the moves as a sequence"):
        connect4.make(8, 12).from_moves("123")


def test_longest_lines_on_the_largest_board():
    """A line of 64 across the 32x64 board and of 32 up a column."""
    game = connect4.make(32, 64, 64)
    ref = Connect4Ref(32, 64, 64)
    grid = [[None] * 64 for _ in range(32)]
    for c in range(63):
        grid[31][c] = "X"
    for c in range(64):
        grid[30][c] = "O" if c < 63 else None  # O on top of X, not under the gap
    grid[30][63] = None
    grid = tuple(tuple(r) for r in grid)
    env = envs_from_grids(game, grid, 0)
    assert np.asarray(jitted(game)["wins"](env)).tolist() == ref.winning_moves(RefState(grid, 0, 126))
    new, reward, done = jitted(game)["step"](env, jnp.int32(63))
    assert (float(reward), bool(done), int(new.winner)) == (1.0, True, 0)
    new, reward, done = jitted(game)["step"](env, jnp.int32(5))  # not a line
    assert (float(reward), bool(done)) == (0.0, False)

    tall = connect4.make(32, 3, 32)
    # X has column 1 but its top cell, O column 2 but its top cell.
    grid = tuple(
        tuple("X" if c == 0 and r > 0 else ("O" if c == 1 and r > 0 else None) for c in range(3))
        for r in range(32)
    )
    env = envs_from_grids(tall, grid, 0)
    assert np.asarray(jitted(tall)["wins"](env)).tolist() == [True, False, False]
    new, reward, done = jitted(tall)["step"](env, jnp.int32(0))
    assert (float(reward), int(new.winner)) == (1.0, 0)
    assert np.asarray(jitted(tall)["board"](new))[:, 0].tolist() == [1] * 32



@pytest.mark.parametrize("game, moves", [
    (connect4.make(), ["", "15263", "4453", "152637", "1122334"]),  # O to move in 15263: X threatens 4
    (connect4.make(7, 40, 4), [[], [1, 2, 1, 2, 1], [1, 2, 1, 2, 1, 2, 40]]),
    (tictactoe.GAME, ["", "1425", "15", "14253"]),
], ids=["connect4", "c4_7x40", "tictactoe"])
def test_the_winning_moves_of_both_sides_are_each_sides_own(game, moves):
    """``winning_moves_of_both`` (one vmapped call, what the solver's bounds
    and the heuristic prior share) against ``winning_moves`` of the position
    and of the position with the opponent to move, finished games included."""
    from c4jax.games.env import with_opponent_to_move
    from c4jax.games.rollout import winning_moves_of_both

    both = jax.jit(winning_moves_of_both)
    for m in moves:
        env = game.from_moves(m)
        mine, theirs = both(env)
        np.testing.assert_array_equal(mine, game.winning_moves(env), err_msg=str(m))
        np.testing.assert_array_equal(theirs, game.winning_moves(with_opponent_to_move(env)), err_msg=str(m))
        if m == "15263":  # O to move: X would win in column 4, O nowhere
            assert not np.asarray(mine).any() and np.flatnonzero(theirs).tolist() == [3]
