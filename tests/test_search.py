"""run_mcts: agreement with mctx, hand-worked trees, tactics, invariants,
determinism, options, and the errors of its arguments (keys, budgets,
capacities, options)."""

from __future__ import annotations

import functools
import json
import pathlib

import chex
import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

import c4jax
from c4jax.tools.players import parse_player
from c4jax.search import prior_logits
from c4jax.games import connect4 as c4
from c4jax.games import tictactoe as ttt
from marks import slow_unless

DATA = pathlib.Path(c4jax.__file__).parent / "data" / "connect4_positions.jsonl"
TREE_FIELDS = (
    "node_visits", "raw_values", "node_values", "parents", "action_from_parent",
    "children_index", "children_prior_logits", "children_visits", "children_rewards",
    "children_discounts", "children_values",
)


def stack(envs):
    return jax.tree.map(lambda *xs: jnp.stack(xs), *envs)


def row(tree, b=0):
    return jax.tree.map(lambda x: np.asarray(x[b]), tree)


def records():
    return [json.loads(line) for line in DATA.read_text().splitlines()]


# --------------------------------------------------------------------------
# Agreement with mctx's own search (something we did not write).


@functools.partial(jax.jit, static_argnums=2)
def _mctx_reference(key, env, n):
    """mctx.muzero_policy on our root_fn/recurrent_fn, with run_mcts's key
    schedule (root_key, policy_key = split(key)) and its default Q transform.
    Jitted: one program per game and budget (eagerly, each of mctx's
    operations compiles on its own)."""
    root_key, policy_key = jax.random.split(key)
    envs = jax.tree.map(lambda x: x[None], env)
    root = c4jax.make_root_fn()(None, root_key, envs)
    invalid = ~jax.vmap(env.game.legal_action_mask)(envs)
    qtransform = functools.partial(mctx.qtransform_by_min_max, min_value=-1.0, max_value=1.0)
    return mctx.muzero_policy(
        None, policy_key, root, c4jax.make_recurrent_fn(), n,
        invalid_actions=invalid, qtransform=qtransform, dirichlet_fraction=0.0,
    ).search_tree


def _nodes_below_terminal(tree):
    """Indices of expanded nodes whose parent is a finished game."""
    t = row(tree)
    used = np.nonzero(t.node_visits > 0)[0]
    return [i for i in used if t.parents[i] >= 0 and t.embeddings.done[t.parents[i]]]


@pytest.mark.parametrize(
    "game,moves,n,seed",
    # One budget per game: one program of mctx's (jitted) and one search of
    # ours per game.
    [(c4, "", 60, 42), (ttt, "5", 40, 42), (c4, "4453", 60, 0), (ttt, "", 40, 3)],
)
def test_same_tree_as_mctx_muzero_policy(game, moves, n, seed):
    key = jax.random.key(seed)
    env = game.from_moves(moves)
    ref = _mctx_reference(key, env, n)
    # Precondition: mctx never expanded below a finished game here (where it
    # does, the trees differ by design; see the next test).
    assert _nodes_below_terminal(ref) == []
    # solver=False: the solver's proofs change selection once a finished
    # game is reached (mctx has no solver).
    # mctx's tree has n + 1 nodes; ours the budget's bucket + 1 (65: the
    # search the hand-worked trees and the next test run): its first n + 1
    # nodes are mctx's, node for node, and the others were never used.
    ours = c4jax.run_mcts(key, env, n, solver=False, **c4jax.MCTX_RECIPE).search_tree
    assert ours.node_visits.shape == (1, 65)
    for field in TREE_FIELDS:
        np.testing.assert_allclose(
            np.asarray(getattr(ours, field))[:, :n + 1], np.asarray(getattr(ref, field)),
            rtol=0, atol=1e-6, err_msg=field,
        )
    unused = row(ours)
    assert np.all(unused.node_visits[n + 1:] == 0) and np.all(unused.parents[n + 1:] == -1)
    assert np.all(unused.children_index[n + 1:] == -1) and np.all(unused.children_visits[n + 1:] == 0)


def test_terminal_aware_where_mctx_expands_below_finished_games():
    key, env, n = jax.random.key(42), c4.from_moves("4453"), 60
    ref = _mctx_reference(key, env, n)
    ours = c4jax.run_mcts(key, env, n, solver=False, **c4jax.MCTX_RECIPE).search_tree
    below = _nodes_below_terminal(ref)
    assert below, "mctx should spend nodes below finished games in this position"
    assert _nodes_below_terminal(ours) == []
    # Identical up to the first node mctx put below a finished game.
    first = min(below)
    np.testing.assert_array_equal(
        np.asarray(ours.parents[0, :first]), np.asarray(ref.parents[0, :first])
    )
    np.testing.assert_array_equal(
        np.asarray(ours.action_from_parent[0, :first]), np.asarray(ref.action_from_parent[0, :first])
    )
    # mctx used all n + 1 nodes; we used fewer, and every simulation still
    # reached the root.
    t = row(ours)
    assert np.sum(t.node_visits > 0) < n + 1
    assert t.node_visits[0] == n + 1 and t.children_visits[0].sum() == n


# --------------------------------------------------------------------------
# Hand-worked trees, for mctx's recipe (c4jax.MCTX_RECIPE: uniform prior,
# uniformly random rollouts, one simulation at a time; PUCT c1 = 1.25,
# c2 = 19652, Q by min-max over [-1, 1]: unvisited actions score 0, a draw
# 0.5, a win 1), with and without the solver.


def test_hand_worked_one_legal_move():
    #  X | O | X
    # ---+---+---        X to move (ply 8); only cell 9 is empty.
    #  X | O | O         X at 9 makes no line: the game ends in a draw.
    # ---+---+---
    #  O | X | .
    # Sim 1 expands the child (a finished game, value 0, reward 0); sims 2-5
    # stop at that finished child and back up 0 again: no other node is made.
    # The root's rollout is forced too (X plays 9: draw), so raw value = 0.
    # Root: 1 + 5 visits, value (0 + 5 * 0) / 6 = 0; Q(9) = 0 + 0 * 0 = 0.
    env = ttt.from_moves("12354687")
    assert np.asarray(ttt.legal_action_mask(env)).tolist() == [False] * 8 + [True]
    out = c4jax.run_mcts(jax.random.key(0), env, 5, **c4jax.MCTX_RECIPE)
    t = row(out.search_tree)
    assert int(out.action) == 8
    assert out.visit_counts.tolist() == [0] * 8 + [5]
    assert t.node_visits[:3].tolist() == [6, 5, 0]
    assert t.raw_values[0] == 0.0 and t.node_values[0] == 0.0 and float(out.value) == 0.0
    assert bool(t.embeddings.done[1]) and int(t.embeddings.winner[1]) == -1
    assert float(out.qvalues[8]) == 0.0
    assert np.sum(t.node_visits > 0) == 2


@pytest.mark.parametrize("solver", [False, True])
@pytest.mark.parametrize("n,visits_a,visits_b", [(7, 5, 2), (8, 6, 2)])
def test_hand_worked_two_legal_moves(n, visits_a, visits_b, solver):
    #  X | X | O
    # ---+---+---        O to move (ply 7); cells 6 and 9 are empty.
    #  O | O | .    a = cell 6 (action 5): O completes 4-5-6, wins: Q = +1.
    # ---+---+---   b = cell 9 (action 8): blocks 7-8-9; X then fills 6,
    #  X | X | .        no line: a draw, Q = 0.
    # Scores (min-max: win 1, draw 0.5, unvisited 0), prior 1/2 each,
    # policy term u(n_x) = sqrt(N) * pb_c(N) * 0.5 / (1 + n_x),
    # pb_c(N) = 1.25 + ln((N + 19653) / 19652), N = root visits.
    # Sim 1 is a tie (broken by mctx's 1e-7 noise); either way:
    #  if a first: N=2: a 1+0.442=1.442 > b 0+0.884   -> a (2, 0)
    #              N=3: a 1+0.361 > b 0+1.083          -> a (3, 0)
    #              N=4: a 1+0.313 > b 0+1.250          -> a (4, 0)
    #              N=5: a 1+0.280 < b 0+1.398          -> b (4, 1)
    #              N=6: a 1+0.255 > b 0.5+0.766        -> a (5, 1)
    #              N=7: a 1+0.276 < b 0.5+0.827        -> b (5, 2)
    #  if b first: N=2: a 0+0.884 < b 0.5+0.442=0.942  -> b (0, 2)
    #              N=3..7: a wins every comparison      -> a (5, 2)
    #  N=8 (8th sim): a 1+0.236 > b 0.5+0.589           -> a (6, 2)
    # b's 2nd visit expands b's only child (X fills 6: draw, value 0);
    # a later visit stops at that finished child.  The root's rollout is
    # O at 6 (+1) or O at 9 then X at 6 (0), so raw value is 0 or 1 and the
    # root value is (raw + visits_a * 1 + visits_b * 0) / (n + 1).
    # With the solver: the root is proven won from the start (O has a win in
    # one: decisive move), so out.value is exactly 1; b is proven a draw once
    # its child (a finished draw) exists, and from then on it is dominated
    # by a (upper bound 0 < the root's lower bound 1), but b never gets a 3rd
    # visit before n = 8 anyway, so the visit counts are the same.
    env = ttt.from_moves("1324758")
    assert np.flatnonzero(np.asarray(ttt.legal_action_mask(env))).tolist() == [5, 8]
    out = c4jax.run_mcts(jax.random.key(7), env, n, solver=solver, **c4jax.MCTX_RECIPE)
    t = row(out.search_tree)
    expected = [0] * 9
    expected[5], expected[8] = visits_a, visits_b
    assert out.visit_counts.tolist() == expected
    assert int(out.action) == 5
    assert float(out.qvalues[5]) == 1.0 and float(out.qvalues[8]) == 0.0
    raw = float(t.raw_values[0])
    assert raw in (0.0, 1.0)
    mean = (raw + visits_a) / (n + 1)
    np.testing.assert_allclose(t.node_values[0], mean, rtol=1e-6)
    np.testing.assert_allclose(float(out.value), 1.0 if solver else mean, rtol=1e-6)
    a = t.children_index[0, 5]
    b = t.children_index[0, 8]
    assert t.node_visits[a] == visits_a and t.node_values[a] == 0.0 and bool(t.embeddings.done[a])
    assert t.node_visits[b] == visits_b and t.node_values[b] == 0.0
    assert np.sum(t.node_visits > 0) == 4  # root, a, b, b's finished child
    lo, hi = t.extra_data.value_lower, t.extra_data.value_upper
    assert (lo[a], hi[a]) == (0.0, 0.0)  # a finished game
    if solver:
        assert (lo[0], hi[0]) == (1.0, 1.0)  # root: O wins at 6
        assert (lo[b], hi[b]) == (0.0, 0.0)  # X's forced reply draws
    else:
        assert (lo[0], hi[0]) == (-1.0, 1.0) and (lo[b], hi[b]) == (-1.0, 1.0)


@pytest.mark.parametrize("solver", [False, True])
def test_hand_worked_three_legal_moves(solver):
    #  X | X | .
    # ---+---+---        X to move (ply 6); cells 3, 5 and 7 are empty.
    #  X | . | O    w1 = cell 3 (action 2): X wins (1-2-3): Q = +1.
    # ---+---+---   l  = cell 5 (action 4): O then wins at once (3-6-9 or
    #  . | O | O         7-8-9), whatever it plays: Q = -1.
    #               w2 = cell 7 (action 6): X wins (1-4-7): Q = +1.
    # Scores (min-max: win 1, loss 0, unvisited 0), prior 1/3 each,
    # u(n_x) = sqrt(N) * pb_c(N) / 3 / (1 + n_x), N = root visits:
    #  N=1: all three score 0.417, a tie; say w1 (the other orders are
    #       symmetric or visit l first, see below).
    #  N=2..7: w1 1+u(1..6) = 1.295, 1.241, 1.208, 1.186, 1.170, 1.158 beats
    #       the unvisited 0.589, 0.722, 0.834, 0.932, 1.021, 1.103   -> w1 x7
    #  N=8: w1 1.147 < l = w2 = 1.179 (a tie between the unvisited)
    #       if l: (7, 1, 0); N=9: w2 0+1.251 > w1 1.156 > l 0+0.625;
    #       N=10..15: w2 1+u = 1.659, 1.461, 1.361, 1.301, 1.260, 1.231
    #       beats w1 1.165 .. 1.202 and l 0.659 .. 0.807       -> (7, 1, 7)
    #       if w2 first at N=8, l comes in one step later; every order of
    #       the ties ends at (w1, l, w2) = (7, 1, 7) after 15 simulations
    #       (enumerated by hand and by a script over all tie orders).
    # l's one visit expands O's node: O wins in one whatever it plays, so its
    # rollout is +1 for O and Q(l) = 0 + (-1) * 1 = -1.  w1, w2 are finished
    # games: Q = reward = +1.  The root's own rollout is +1 (X plays 3 or 7)
    # or -1 (X plays 5, O wins), so its value is (raw + 7 + 7 - 1) / 16.
    # With the solver: the root is proven won (X has a win in one), O's node
    # after l is proven won for O (a win in one), so l is proven lost; the
    # visit counts are the same (l gets no second visit either way) and
    # out.value is exactly +1.
    env = ttt.from_moves("162849")
    assert np.flatnonzero(np.asarray(ttt.legal_action_mask(env))).tolist() == [2, 4, 6]
    # Six keys: different tie-breaking noise.  One game at a time: the
    # compiled searches of the one- and two-move trees above (a batch row
    # is the one-game search of its key:
    # test_same_key_same_result_and_batch_rows_equal_single_games).
    for key in jax.random.split(jax.random.key(11), 6):
        out = c4jax.run_mcts(key, env, 15, solver=solver, **c4jax.MCTX_RECIPE)
        t = row(out.search_tree)
        assert out.visit_counts.tolist() == [0, 0, 7, 0, 1, 0, 7, 0, 0]
        assert out.qvalues.tolist() == [0, 0, 1, 0, -1, 0, 1, 0, 0]
        assert int(out.action) in (2, 6)
        raw = float(t.raw_values[0])
        assert raw in (-1.0, 1.0)
        np.testing.assert_allclose(t.node_values[0], (raw + 13) / 16, rtol=1e-6)
        np.testing.assert_allclose(float(out.value), 1.0 if solver else (raw + 13) / 16, rtol=1e-6)
        lose = t.children_index[0, 4]
        assert t.raw_values[lose] == 1.0 and t.node_values[lose] == 1.0
        lo, hi = t.extra_data.value_lower, t.extra_data.value_upper
        if solver:
            assert (lo[0], hi[0]) == (1.0, 1.0) and (lo[lose], hi[lose]) == (1.0, 1.0)
            assert out.qvalue_lower.tolist() == [-1, -1, 1, -1, -1, -1, 1, -1, -1]
            assert out.qvalue_upper.tolist() == [-1, -1, 1, -1, -1, -1, 1, -1, -1]
        else:  # nothing proven; illegal actions lose by rule
            assert out.qvalue_lower.tolist() == [-1] * 9
            assert out.qvalue_upper.tolist() == [-1, -1, 1, -1, 1, -1, 1, -1, -1]
        assert np.sum(t.node_visits > 0) == 4  # root, w1, l, w2


def test_solver_proves_a_loss_two_plies_deep_and_keeps_means_when_all_lose():
    # X: 2, 1; O: 7.  X threatens 3 (1-2-3); O must block there, but then X
    # plays 5 and threatens both 8 (2-5-8) and 9 (1-5-9): every O move loses
    # (the exact solver agrees).  With the decisive-move rules the search
    # proves it: each other O move leads to an X node with a win in one; the
    # block leads to X's fork, after which O faces two threats.
    env = ttt.from_moves("271")
    exact = ttt.solve(env)
    legal = np.asarray(ttt.legal_action_mask(env))
    assert np.all(exact[legal] == -1)
    # 3,000 simulations: the one-game tic-tac-toe search of
    # test_solver_bounds_hold_the_exact_value_of_every_node.
    out = c4jax.run_mcts(jax.random.key(0), env, 3000)
    t = row(out.search_tree)
    assert (t.extra_data.value_lower[0], t.extra_data.value_upper[0]) == (-1.0, -1.0)
    assert float(out.value) == -1.0
    assert legal[int(out.action)]
    # Every move loses, so the Q-values keep their means (they rank the
    # losing moves by how often a fallible opponent goes wrong): not all -1.
    q = np.asarray(out.qvalues)[legal]
    assert np.all(q >= -1.0) and np.all(q < 0.0) and not np.all(q == -1.0)



# --------------------------------------------------------------------------
# Tactics, both players, both games, 10 seeds each.


@functools.cache
def _records_searched_at_1000():
    """``(action, qvalue_lower, qvalue_upper)`` of one jitted search, default
    options and 1,000 simulations, of the tactical positions ten times over
    (keys ``split(key(0), 300)``) followed by every record (keys
    ``split(key(0), 330)``, as ``run_mcts(key(0), envs, 1000)`` splits its
    key).  A batch row is the one-game search of its key
    (test_same_key_same_result_and_batch_rows_equal_single_games), so each
    test below reads the searches it would run alone, from one compiled
    program (both tests are ``optimized``: whichever runs first compiles it)."""
    tactical = [r for r in records() if r["kind"] == "tactical"]
    envs = stack([c4.from_moves(r["moves"]) for r in tactical * 10 + records()])
    keys = jnp.concatenate([jax.random.split(jax.random.key(0), len(tactical) * 10),
                            jax.random.split(jax.random.key(0), len(records()))])

    def search(k, e):
        out = c4jax.run_mcts(k, e, 1000)
        return out.action, out.qvalue_lower, out.qvalue_upper

    return jax.device_get(jax.jit(search)(keys, envs))


@pytest.mark.slow
@pytest.mark.optimized
def test_connect4_tactical_positions_win_now_else_block():
    recs = [r for r in records() if r["kind"] == "tactical"]
    assert {r["to_move"] for r in recs} == {1, 2}
    # Default options, keys split(key(0), 300) over the positions ten times
    # over.  At 300 simulations 4 of these 300 searches still miss the block
    # in "621454551432" (a lost position: every move loses, the block only
    # later); at 1000 none does.
    actions = np.asarray(_records_searched_at_1000()[0][:len(recs) * 10])
    for i, a in enumerate(actions):
        r = recs[i % len(recs)]
        assert a in r["best"], (r["moves"], r["tactic"], a, r["best"])


def test_tictactoe_tactics_both_players():
    cases = [
        ("1425", [2]),   # X to move: win at cell 3 (1-2-3), not the block at 6
        ("14259", [5]),  # O to move: win at cell 6 (4-5-6), not the block at 3
        ("152", [2]),    # O to move, no win: block X's 1-2-3 at cell 3
        ("1593", [6]),   # X to move, no win: block O's 3-5-7 at cell 7
    ]
    for moves, best in cases:  # the expected move is optimal (exact solver)
        values = ttt.solve(ttt.from_moves(moves))
        assert values[best[0]] == np.nanmax(values), moves
        env = ttt.from_moves(moves)
        if moves in ("1425", "14259"):  # the immediate win, and a threat to block
            assert np.flatnonzero(np.asarray(ttt.winning_moves(env))).tolist() == best
            assert np.asarray(ttt.winning_moves(c4jax.games.env.with_opponent_to_move(env))).any()
        else:  # no win; the unique block
            assert not np.asarray(ttt.winning_moves(env)).any()
            assert np.flatnonzero(np.asarray(ttt.winning_moves(c4jax.games.env.with_opponent_to_move(env)))).tolist() == best
    envs = stack([ttt.from_moves(m) for m, _ in cases] * 10)
    keys = jax.random.split(jax.random.key(1), len(cases) * 10)
    # 64 simulations, 40 games: the compiled search of
    # test_a_move_proven_to_lose_is_never_played_while_another_is_not's
    # default options.
    actions = np.asarray(c4jax.run_mcts(keys, envs, 64).action)
    for i, a in enumerate(actions):
        moves, best = cases[i % len(cases)]
        assert a in best, (moves, a, best)


@pytest.mark.slow
@pytest.mark.optimized
def test_connect4_perfect_play_positions_floor():
    # The floor asserted, 86.7% strictly optimal moves and 96.1% keeping the
    # game-theoretic value, lies below what the default options and mctx's
    # recipe play at 1,000 simulations, key 0 (docs/strength.md); a random
    # legal move scores about 0.26 and 0.62.
    recs = records()
    # The search of every record with key(0) (run_mcts(key(0), envs, 1000)).
    actions, lower, upper = (np.asarray(x)[-len(recs):] for x in _records_searched_at_1000())
    strict = np.mean([a in r["best"] for a, r in zip(actions, recs)])
    wdl = np.mean([a in r["best_wdl"] for a, r in zip(actions, recs)])
    assert strict >= 0.867 and wdl >= 0.961, (strict, wdl)
    # The solver's proofs agree with Pascal Pons' perfect-play scores (the
    # sign of a column's score is its game-theoretic value for the mover).
    proven = 0
    for i, r in enumerate(recs):
        for a, score in enumerate(r["scores"]):
            if score is None:
                assert lower[i, a] == upper[i, a] == -1.0  # illegal: a loss by rule
                continue
            assert lower[i, a] <= np.sign(score) <= upper[i, a], (r["moves"], a, score)
            proven += lower[i, a] == upper[i, a]
    assert proven >= 100, proven


# --------------------------------------------------------------------------
# Invariants on a batch mixing live and finished games.


def _check_tree_invariants(tree, n, live):
    for b in range(tree.node_visits.shape[0]):
        t = row(tree, b)
        assert np.all(np.isfinite(t.node_values)) and np.all(np.isfinite(t.children_values))
        assert np.all(np.isfinite(t.raw_values))
        used = t.node_visits > 0
        if not live[b]:
            assert used.tolist() == [True] + [False] * (len(used) - 1)
            continue
        assert t.node_visits[0] == n + 1 and t.children_visits[0].sum() == n
        assert np.all(np.abs(t.node_values[used]) <= 1 + 1e-6)
        game = t.embeddings.game
        for i in np.flatnonzero(used):
            env_i = jax.tree.map(lambda x: x[i], t.embeddings)
            legal = np.asarray(game.legal_action_mask(env_i))
            # no visit, no child through an illegal action, at any node
            assert np.all(t.children_visits[i][~legal] == 0)
            assert np.all(t.children_index[i][~legal] == -1)
            if bool(env_i.done):  # nothing below a finished game
                assert np.all(t.children_index[i] == -1) and t.node_values[i] == 0.0
            else:
                assert t.node_visits[i] == 1 + t.children_visits[i].sum()
            for a in np.flatnonzero(t.children_index[i] >= 0):
                c = t.children_index[i, a]
                assert t.parents[c] == i and t.action_from_parent[c] == a and c > i
                assert t.children_visits[i, a] == t.node_visits[c]
                np.testing.assert_allclose(t.children_values[i, a], t.node_values[c], atol=1e-6)
                if t.children_rewards[i, a] == 1.0:  # a win found in the tree
                    assert t.children_discounts[i, a] == 0.0
                    q = t.children_rewards[i, a] + t.children_discounts[i, a] * t.children_values[i, a]
                    assert q == 1.0


def _exact_value(stones) -> float:
    """Perfect-play value of a tic-tac-toe board for the player to move (0 if
    finished), from the exact solver's table."""
    x, o = int(stones[0, 0]), int(stones[1, 0])
    idx = sum((1 if x >> i & 1 else 2 if o >> i & 1 else 0) * 3**i for i in range(9))
    values = ttt.solution_table()[idx]
    legal = values != -2
    return float(values[legal].max()) if legal.any() else 0.0


# One budget (3,000 simulations, a tree of 4,097 nodes): one compiled
# search, also the one of the other one-game tic-tac-toe searches of the
# default options here (test_solver_proves_a_loss..., test_invariants_tictactoe_deep_search).
@pytest.mark.parametrize("moves,n,seed", [("", 3000, 0), ("2", 3000, 1), ("15", 3000, 2), ("271", 3000, 3)])
def test_solver_bounds_hold_the_exact_value_of_every_node(moves, n, seed):
    # Soundness against the exact solver: every node's proven bounds contain
    # its perfect-play value, and the search proves a real share of them.
    out = c4jax.run_mcts(jax.random.key(seed), ttt.from_moves(moves), n)
    t = row(out.search_tree)
    used = np.flatnonzero(t.node_visits > 0)
    lo, hi = t.extra_data.value_lower[used], t.extra_data.value_upper[used]
    exact = np.array([_exact_value(t.embeddings.stones[i]) for i in used])
    assert np.all(lo <= exact) and np.all(exact <= hi)
    solved = lo == hi
    # Measured with the defaults: 18% of the 2,551 nodes on the empty board
    # at 3,000 (the search spends its simulations on the unsolved lines).
    assert solved.mean() > 0.15, solved.mean()
    # Proven root actions: Q is exactly +-1 for proven wins/losses and every
    # proven bound agrees with the exact per-action values.
    env = ttt.from_moves(moves)
    values = ttt.solve(env)
    for a in np.flatnonzero(np.asarray(ttt.legal_action_mask(env))):
        c = t.children_index[0, a]
        if c < 0:
            continue
        r, d = t.children_rewards[0, a], t.children_discounts[0, a]
        q_lo, q_hi = r + d * t.extra_data.value_upper[c], r + d * t.extra_data.value_lower[c]
        assert q_lo <= values[a] <= q_hi
        if q_lo == 1.0:
            assert float(out.qvalues[a]) == 1.0
        if q_hi == -1.0 and t.extra_data.value_upper[0] > -1.0:
            assert float(out.qvalues[a]) == -1.0
    # The move played is never proven worse than another: once the root is
    # solved it is an optimal move.
    if t.extra_data.value_lower[0] == t.extra_data.value_upper[0]:
        assert values[int(out.action)] == np.nanmax(values)


@pytest.mark.parametrize(
    "moves,n,options",
    slow_unless([
        ("21537", 10, {}),
        ("21537", 40, {"qtransform": "parent_and_siblings"}),
        ("21537", 40, {"selection": "gumbel"}),
        ("24687", 200, {"selection": "gumbel", "max_num_considered_actions": 2}),
        ("2197", 40, {"temperature": 1.0}),
        ("2197", 40, {"prior": "heuristic", "rollout_policy": "heuristic"}),
    ], lambda case: case[2] in ({}, {"selection": "gumbel"})),
)
def test_a_move_proven_to_lose_is_never_played_while_another_is_not(moves, n, options):
    # A move proven to lose is excluded at the root even while the root
    # itself is unproven (excluding only the moves proven worse than the
    # root's lower bound would leave it playable there, able to win ties in
    # visits, Gumbel's final choice and temperature sampling).  40 keys per
    # position (the batch of test_tictactoe_tactics_both_players).
    env = ttt.from_moves(moves)
    exact = ttt.solve(env)
    out = c4jax.run_mcts(jax.random.key(0), stack([env] * 40), n, **options)
    upper = np.asarray(out.qvalue_upper)
    lower = np.asarray(out.qvalue_lower)
    legal = ~np.isnan(exact)
    assert np.all(lower[:, legal] <= exact[legal]) and np.all(exact[legal] <= upper[:, legal])
    for b, a in enumerate(np.asarray(out.action)):
        if np.any(legal & (upper[b] > -1.0)):
            assert upper[b, a] > -1.0, (b, a, upper[b])


def test_solver_plays_a_win_in_one_that_plain_puct_leaves_unexplored():
    # On a 7x40 board mctx's recipe (uniform prior, min-max Q scoring an
    # unvisited move as a loss) visits few columns; without the solver it
    # missed X's win in column 4 (0-based 3) after 1 21 2 22 3 23 and played
    # column 37.  The solver's decisive-move rule finds it; so do the
    # defaults (the heuristic prior and first-play urgency) without it.
    g = c4.make(7, 40, 4)
    env = g.env_reset()
    for a in (0, 20, 1, 21, 2, 22):
        env = g.env_step(env, a)[0]
    assert np.flatnonzero(np.asarray(g.winning_moves(env))).tolist() == [3]
    recipe = c4jax.MCTX_RECIPE
    assert int(c4jax.run_mcts(jax.random.key(0), env, 200, **recipe).action) == 3
    assert int(c4jax.run_mcts(jax.random.key(0), env, 200, solver=False, **recipe).action) == 36
    assert int(c4jax.run_mcts(jax.random.key(0), env, 200, solver=False).action) == 3


@pytest.mark.slow
@pytest.mark.parametrize("rows,cols", [(7, 40), (14, 20)])
def test_first_play_urgency_visits_every_column_of_a_wide_board(rows, cols):
    # When min-max Q scores an unvisited move as a loss
    # (unvisited_q="loss", mctx's rule), 200 simulations from the empty 7x40
    # board visit 4 of the 40 columns with the other defaults (2 with mctx's
    # recipe).  The default, unvisited_q="parent" (an unvisited move is worth
    # the node's own value), tries every one.
    env = c4.make(rows, cols, 4).env_reset()
    out = c4jax.run_mcts(jax.random.key(0), env, 200)
    assert int(np.sum(np.asarray(out.visit_counts) > 0)) == cols
    if cols == 40:
        plain = c4jax.run_mcts(jax.random.key(0), env, 200, unvisited_q="loss")
        assert int(np.sum(np.asarray(plain.visit_counts) > 0)) < 10
    with pytest.raises(ValueError, match="unvisited_q must be one of 'loss', 'parent'"):
        c4jax.run_mcts(jax.random.key(0), env, 10, unvisited_q="zero")


@pytest.mark.slow
def test_solver_finds_the_trap_that_plain_means_miss():
    # After X's edge opening (cell 2), O's far-corner replies (7, 9) and the
    # edges next to X's lose to a fork.  Searches of 1600 simulations, one
    # key each: in 200 (ttt_tables.md section 4) 7 pick a losing reply
    # without the solver (3.5%), none with it; in the first 100 of this key
    # schedule 4 do without it, none with it.
    env = ttt.from_moves("2")
    values = ttt.solve(env)
    envs = stack([env] * 100)
    # mctx's recipe (uniformly random rollouts), as ttt_tables.md measured.
    recipe = c4jax.MCTX_RECIPE
    with_solver = np.asarray(c4jax.run_mcts(jax.random.key(0), envs, 1600, **recipe).action)
    plain = np.asarray(c4jax.run_mcts(jax.random.key(0), envs, 1600, solver=False, **recipe).action)
    assert np.sum(values[with_solver] < 0) == 0, np.unique(with_solver + 1, return_counts=True)
    assert np.sum(values[plain] < 0) >= 3, np.unique(plain + 1, return_counts=True)


@pytest.mark.parametrize("selection", slow_unless(["puct", "uct", "gumbel"], lambda selection: selection == "puct"))
def test_invariants_batch_of_live_and_finished_games(selection):
    finished = [c4.from_moves("1212121"), c4.from_moves("")]
    finished[1] = c4.env_step(c4.from_moves("1111112"), 0)[0]  # illegal move: game over
    live = [c4.from_moves("4453"), c4.from_moves("121212"), c4.from_moves("3")]
    envs = stack([live[0], finished[0], live[1], finished[1], live[2]])
    is_live = [True, False, True, False, True]
    n = 64  # the batch shape and budget bucket of the next tests' searches
    out = c4jax.run_mcts(jax.random.key(3), envs, n, selection=selection)
    assert out.action.tolist()[1] == -1 and out.action.tolist()[3] == -1
    assert np.all(np.asarray(out.action_weights)[[1, 3]] == 0.0)
    assert np.all(np.asarray(out.visit_counts)[[1, 3]] == 0)
    for b in (0, 2, 4):
        legal = np.asarray(c4.legal_action_mask(jax.tree.map(lambda x: x[b], envs)))
        assert legal[int(out.action[b])]
        np.testing.assert_allclose(np.asarray(out.action_weights[b]).sum(), 1.0, rtol=1e-6)
    assert int(out.action[2]) == 0  # "121212": X wins in column 1
    assert float(out.qvalues[2, 0]) == 1.0
    for x in (out.action_weights, out.qvalues, out.value):
        assert np.all(np.isfinite(np.asarray(x)))
    _check_tree_invariants(out.search_tree, n, is_live)


def test_invariants_tictactoe_deep_search():
    # 3,000 simulations: the search of test_solver_bounds_hold_the_exact_value_of_every_node.
    out = c4jax.run_mcts(jax.random.key(5), ttt.env_reset(), 3000)
    _check_tree_invariants(out.search_tree, 3000, [True])
    # The tic-tac-toe game tree is small: 3,000 simulations reach finished games.
    t = row(out.search_tree)
    assert np.any(t.embeddings.done[t.node_visits > 0])


# --------------------------------------------------------------------------
# Determinism, batching, compile-once.


def test_same_key_same_result_and_batch_rows_equal_single_games():
    moves = ["", "4", "4453", "121212", "3344"]
    envs = stack([c4.from_moves(m) for m in moves])
    key = jax.random.key(11)
    a = c4jax.run_mcts(key, envs, 64)
    b = c4jax.run_mcts(key, envs, 64)
    chex.assert_trees_all_equal(a, b)
    keys = jax.random.split(key, len(moves))
    for i, m in enumerate(moves):
        single = c4jax.run_mcts(keys[i], c4.from_moves(m), 64)
        assert int(single.action) == int(a.action[i])
        chex.assert_trees_all_equal(single.visit_counts, a.visit_counts[i])
        chex.assert_trees_all_close(single.qvalues, a.qvalues[i])
        chex.assert_trees_all_equal(
            jax.tree.map(lambda x: x[0], single.search_tree),
            jax.tree.map(lambda x: x[i], a.search_tree),
        )
    # A [B] batch of keys: row i uses keys[i].
    c = c4jax.run_mcts(keys, envs, 64)
    chex.assert_trees_all_equal(a, c)


@pytest.mark.slow
def test_the_default_is_one_lane_for_one_game_and_for_a_batch():
    opts = c4jax.SearchOptions()
    assert opts.lanes is None
    assert (opts.lanes_for(1), opts.lanes_for(2), opts.lanes_for(64)) == (1, 1, 1)
    assert c4jax.SearchOptions(selection="gumbel").lanes_for(1) == 1
    assert c4jax.SearchOptions(lanes=8).lanes_for(64) == 8
    env, key = c4.from_moves("4453"), jax.random.key(3)
    default = c4jax.run_mcts(key, env, 40)
    chex.assert_trees_all_equal(default, c4jax.run_mcts(key, env, 40, lanes=1))
    # 8 lanes: the one-game search tests/test_lanes.py compiles too.
    eight = c4jax.run_mcts(key, env, 40, lanes=8)
    assert int(eight.visit_counts.sum()) == int(default.visit_counts.sum()) == 40
    assert not np.array_equal(eight.search_tree.children_visits, default.search_tree.children_visits)
    # A batch of one is one game.
    one = c4jax.run_mcts(key[None], stack([env]), 40)
    chex.assert_trees_all_equal(default.search_tree, one.search_tree)


# Each selection rule once; the one-game blocks (None) and vectorised ones
# (32) are the same code for every rule.
@pytest.mark.parametrize("options,block", slow_unless(
    [({}, None), ({"selection": "uct", "solver": False}, 32), ({"selection": "gumbel"}, 32)],
    lambda case: case == ({"selection": "uct", "solver": False}, 32)))
def test_a_batch_split_over_cpu_devices_and_blocks_builds_the_trees_of_single_games(options, block, monkeypatch):
    """A batch of 67 games, split over the CPU devices (one per core; padded
    to 68 on two) and, on each, searched one game at a time (the CPU's
    blocks) or in vectorised blocks of up to 32 (as a GPU runs a batch): row
    ``i`` is the one-game search with key ``split(key, 67)[i]``, every field
    of its tree.  (67 games: the split batch of the next test but one, one
    compiled search for both.)"""
    from c4jax.search import programs

    if block is not None:
        monkeypatch.setattr(programs, "BLOCK", block)
    games = 67
    moves = ["", "4453", "121212", "44", "7"] * 14
    envs = stack([c4.from_moves(m) for m in moves[:games]])
    key = jax.random.key(5)
    out = c4jax.run_mcts(key, envs, 24, lanes=1, **options)
    mesh = programs.cpu_mesh(games)
    devices = 1 if mesh is None else mesh.size
    assert devices == (2 if len(jax.devices("cpu")) >= 2 else 1)
    expected = 1 if block is None else (23 if devices == 1 else 17)  # 34 rows per device: 2 blocks of 17
    assert programs.block_size(-(-games // devices), "cpu") == expected
    keys = jax.random.split(key, games)
    # The first rows, both sides of every block's and device's edge, the last.
    for i in (0, 1, 16, 17, 33, 34, 50, 51, 66):
        one = c4jax.run_mcts(keys[i], jax.tree.map(lambda x: x[i], envs), 24, lanes=1, **options)
        chex.assert_trees_all_equal(jax.tree.map(lambda x: x[i], out.replace(search_tree=None)),
                                    one.replace(search_tree=None))
        chex.assert_trees_all_equal(jax.tree.map(lambda x: x[i], out.search_tree),
                                    jax.tree.map(lambda x: x[0], one.search_tree))


def test_block_sizes_divide_the_batch(monkeypatch):
    from c4jax.search import programs

    assert [programs.block_size(g, "cpu") for g in (1, 7, 1024)] == [1, 1, 1]  # the CPU: one game at a time
    monkeypatch.setattr(programs, "BLOCK", 32)
    assert [programs.block_size(g, "cpu") for g in (1, 7, 32, 33, 64, 66, 97, 1024, 1031)] == [
        1, 7, 32, 17, 32, 22, 25, 32, 32]
    assert programs.block_size(1024, "gpu") == 1024


@pytest.mark.slow
def test_a_batch_placed_on_one_device_stays_there_and_an_odd_batch_is_split_padded():
    """Arrays the caller put on one device are searched there (no split);
    a batch of a prime number of games is split over the CPU devices,
    padded, and its rows are those of the unpadded search."""
    from c4jax.search import programs

    # 67 games (a prime): the split search is the one
    # test_a_batch_split_over_cpu_devices_and_blocks_builds_the_trees_of_single_games compiles.
    envs = stack([c4.from_moves(m) for m in (["", "4", "44"] * 23)[:67]])
    placed = jax.device_put(envs, jax.devices()[0])
    assert programs.cpu_mesh(67, (placed,)) is None
    out = c4jax.run_mcts(jax.random.key(2), placed, 20)
    assert out.visit_counts.sharding.device_set == {jax.devices()[0]}
    split = c4jax.run_mcts(jax.random.key(2), envs, 20)
    chex.assert_trees_all_equal(jax.device_get(out), jax.device_get(split))
    if len(jax.devices("cpu")) >= 2:
        assert programs.cpu_mesh(67, (envs,)).size == 2
        assert len(split.visit_counts.sharding.device_set) == 2


def test_jitted_search_compiles_once():
    @jax.jit
    @chex.assert_max_traces(n=1)
    def search(key, env):
        return c4jax.run_mcts(key, env, 50)

    env = c4.from_moves("44")
    for i in range(4):
        search(jax.random.key(i), env)
        env = c4.env_step(env, i)[0]


def test_eager_and_jit_agree():
    # One Connect 4 game, 50 simulations: the eager search is the one-game
    # search compiled for the tests above, the jitted one the program of
    # test_jitted_search_compiles_once (the same function and name: loaded
    # from JAX's persistent cache).
    @jax.jit
    def search(key, env):
        return c4jax.run_mcts(key, env, 50)

    env = c4.from_moves("4453")
    eager = c4jax.run_mcts(jax.random.key(2), env, 50)
    jitted = search(jax.random.key(2), env)
    chex.assert_trees_all_close(eager, jitted)


# --------------------------------------------------------------------------
# Options.


def test_bad_options_raise_value_errors_naming_allowed_values():
    env = c4.env_reset()
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="'puct', 'uct', 'gumbel'"):
        c4jax.run_mcts(key, env, 10, selection="ucb")
    with pytest.raises(ValueError, match="the options are: .*selection"):
        c4jax.run_mcts(key, env, 10, simulations=3)
    with pytest.raises(ValueError, match="'uniform', 'heuristic'"):
        c4jax.run_mcts(key, env, 10, prior="nn")
    with pytest.raises(ValueError, match="num_simulations"):
        c4jax.run_mcts(key, env, 0)
    with pytest.raises(ValueError, match="num_simulations"):
        c4jax.run_mcts(key, env, 2.5)
    with pytest.raises(ValueError, match="temperature"):
        c4jax.run_mcts(key, env, 10, temperature=-1.0)
    with pytest.raises(ValueError, match="dirichlet_fraction"):
        c4jax.run_mcts(key, env, 10, dirichlet_fraction=1.5)
    with pytest.raises(ValueError, match="qtransform"):
        c4jax.run_mcts(key, env, 10, qtransform="minmax")
    with pytest.raises(ValueError, match="capacity"):
        c4jax.run_mcts(key, env, 10, capacity=1)
    with pytest.raises(ValueError, match="solver must be True or False"):
        c4jax.run_mcts(key, env, 10, solver=1)
    with pytest.raises(ValueError, match="temperature must be a finite number >= 0"):
        c4jax.run_mcts(key, env, 10, temperature=True)
    with pytest.raises(ValueError, match=r"dirichlet_fraction must be a number in \[0, 1\]"):
        c4jax.run_mcts(key, env, 10, dirichlet_fraction=True)
    with pytest.raises(ValueError, match=r"max_depth must be None or an int in 1\.\.42"):
        c4jax.run_mcts(key, env, 10, max_depth=10**9)
    # NumPy scalars are the numbers they hold.  (Capacity 10: the search
    # test_capacity_smaller_than_simulations_loses_no_simulation compiles.)
    out = c4jax.run_mcts(key, env, 10, capacity=np.int64(10), pb_c_base=np.float32(19652.0), solver=np.bool_(True))
    assert out.search_tree.node_visits.shape == (1, 10)
    with pytest.raises(ValueError, match="must come from run_mcts"):
        c4jax.run_mcts(key, env, 10, tree=_mctx_reference(key, env, 60))  # the program of the first mctx test
    with pytest.raises(ValueError, match="env must be a c4jax Env"):
        c4jax.run_mcts(key, np.zeros((6, 7)), 10)
    with pytest.raises(ValueError, match="at most one batch axis"):
        c4jax.run_mcts(key, stack([stack([env, env])] * 2), 10)
    empty = jax.tree.map(lambda x: x[:0], stack([env]))
    for search in (lambda: c4jax.run_mcts(key, empty, 10), lambda: c4jax.run_mcts_anytime(key, empty, 0.1),
                   lambda: jax.jit(lambda k, e: c4jax.run_mcts(k, e, 10).action)(jax.random.split(key, 0), empty)):
        with pytest.raises(ValueError, match="^env must be one game or a batch of at least one; got a batch of 0 games"):
            search()
    with pytest.raises(ValueError, match="one key per game"):
        c4jax.run_mcts(jax.random.split(key, 3), stack([env, env]), 10)


def test_search_boundary_errors_are_clear_value_errors():
    env = c4.env_reset()
    for key in (None, "abc", jnp.array([0.5, 0.5]), jnp.array([1, 2], jnp.int32), jnp.zeros(3, jnp.uint32)):
        with pytest.raises(ValueError, match="PRNG key"):
            c4jax.run_mcts(key, env, 4)
    for bad in (dict(value_min="a"), dict(value_max=float("inf")), dict(pb_c_init=True)):
        with pytest.raises(ValueError, match="value_m|pb_c_init"):
            c4jax.run_mcts(jax.random.key(0), env, 4, **bad)
    out = c4jax.run_mcts(jax.random.key(0), env, 4)
    for action in (2.5, "3", True):
        with pytest.raises(ValueError, match="action must be an integer"):
            c4jax.get_subtree(out.search_tree, action)
    with pytest.raises(ValueError, match="a player is written as a string"):
        parse_player(None)


def test_budgets_and_capacities_past_their_limits_are_value_errors():
    env = ttt.from_moves("15")
    key = jax.random.key(0)
    with pytest.raises(ValueError, match=r"num_simulations must be an int in 1\.\."):
        c4jax.run_mcts(key, env, 10**12)
    # Node indices are int32: a capacity past 2**31 - 1 is a ValueError
    # naming the range.
    with pytest.raises(ValueError, match=r"capacity must be None or an int in 2\.\.2,147,483,647; got 1099511627776"):
        c4jax.run_mcts(key, env, 10, capacity=2**40)
    with pytest.raises(ValueError, match=r"capacity must be None or an int in 2\.\."):
        c4jax.mcts_player(10, capacity=2**31)
    for bad in (np.bool_(True), 10.0, np.float32(10)):
        with pytest.raises(ValueError, match="num_simulations must be an int"):
            c4jax.run_mcts(key, env, bad)


def test_numpy_integers_are_budgets_like_python_ints():
    # A budget read from a NumPy array (a sweep over np.arange) searches like
    # the Python int, as capacity and the other options do.  (The search of
    # test_capacity_smaller_than_simulations_loses_no_simulation: 60
    # simulations in 10 nodes.)
    key = jax.random.key(0)
    a = c4jax.run_mcts(key, c4.from_moves("44"), np.int32(60), capacity=np.int64(10))
    b = c4jax.run_mcts(key, c4.from_moves("44"), 60, capacity=10)
    assert a.search_tree.node_visits.shape == b.search_tree.node_visits.shape == (1, 10)
    np.testing.assert_array_equal(a.visit_counts, b.visit_counts)
    chex.assert_trees_all_equal(a.search_tree, b.search_tree)
    env = ttt.from_moves("15")
    assert c4jax.mcts_player(np.int64(10)) is c4jax.mcts_player(10)
    with pytest.raises(ValueError, match=r"seconds must be a number in \(0, 604800\]"):
        c4jax.run_mcts_anytime(key, env, 1e308)
    with pytest.raises(ValueError, match="chunk must be an int in"):
        c4jax.run_mcts_anytime(key, env, 0.1, chunk=10**9)


@pytest.mark.parametrize(
    "options",
    slow_unless([
        dict(selection="uct"),
        dict(selection="gumbel"),
        dict(selection="gumbel", qtransform="min_max"),  # the solver's proven root Q-values
        dict(prior="heuristic"),
        dict(rollout_policy="heuristic", num_rollouts=2),
        dict(qtransform="parent_and_siblings"),
    ], lambda options: options in (dict(selection="uct"), dict(selection="gumbel"))),
)
def test_every_selection_rule_and_option_finds_the_win(options):
    # Position "121212": X to move wins in column 1 (index 0); "1212123": O
    # to move, O has 2,2,2 in column 2 and wins there (index 1); the same
    # two mirrored (columns 7 and 6) and in the middle ("434343": X wins in
    # column 4).  Five games and 64 simulations: the compiled searches of
    # test_invariants_batch_of_live_and_finished_games's batch (puct, uct,
    # gumbel).
    moves, wins = ["121212", "1212123", "767676", "7676765", "434343"], [0, 1, 6, 5, 3]
    envs = stack([c4.from_moves(m) for m in moves])
    out = c4jax.run_mcts(jax.random.key(4), envs, 64, **options)
    assert out.action.tolist() == wins, out.visit_counts
    assert np.asarray(out.qvalues)[np.arange(5), wins].tolist() == [1.0] * 5


def test_gumbel_recommends_among_the_last_candidates_not_only_the_most_visited():
    # X to move: cell 7 wins at once.  With gumbel_scale=0 the recommendation
    # is the best logits + sigma(q) among the actions sequential halving kept.
    env = ttt.from_moves("1245")
    out = c4jax.run_mcts(jax.random.key(0), env, 200, selection="gumbel", gumbel_scale=0.0)
    assert int(out.action) == 6, out.visit_counts


def test_heuristic_prior_prefers_win_then_block():
    win = prior_logits(c4.from_moves("121212"), "heuristic")
    assert int(jnp.argmax(win)) == 0 and float(win[0] - win[1]) == c4jax.search.values.HEURISTIC_LOGIT_GAP
    block = prior_logits(c4.from_moves("12121"), "heuristic")  # O must block column 1
    assert int(jnp.argmax(block)) == 0 and float(block[0] - block[3]) == c4jax.search.values.HEURISTIC_LOGIT_GAP
    full = prior_logits(c4.from_moves("111111"), "uniform")
    assert float(full[0]) == float(jnp.finfo(jnp.float32).min) and np.all(np.asarray(full[1:]) == 0)


def test_max_depth_one_reevaluates_children_instead_of_expanding():
    out = c4jax.run_mcts(jax.random.key(0), c4.env_reset(), 70, max_depth=1)
    t = row(out.search_tree)
    used = np.flatnonzero(t.node_visits > 0)
    assert len(used) == 8  # the root and its 7 children, nothing deeper
    assert np.all(t.parents[used[1:]] == 0)
    assert t.children_visits[0].sum() == 70
    np.testing.assert_array_equal(t.node_visits[t.children_index[0]], t.children_visits[0])


def test_dirichlet_noise_changes_root_prior_only_over_legal_actions():
    env = c4.from_moves("111111")  # column 1 is full
    plain = c4jax.run_mcts(jax.random.key(0), env, 20)
    noisy = c4jax.run_mcts(jax.random.key(0), env, 20, dirichlet_fraction=0.25)
    noisy2 = c4jax.run_mcts(jax.random.key(0), env, 20, dirichlet_fraction=0.25)
    p0 = np.asarray(plain.search_tree.children_prior_logits[0, 0])
    p1 = np.asarray(noisy.search_tree.children_prior_logits[0, 0])
    assert not np.allclose(p0[1:], p1[1:])
    assert p1[0] == np.finfo(np.float32).min
    np.testing.assert_allclose(np.exp(p1[1:]).sum(), 1.0, rtol=1e-5)
    chex.assert_trees_all_equal(noisy, noisy2)
    assert int(noisy.visit_counts[0]) == 0


def test_temperature_samples_visited_actions_deterministically():
    env = c4.env_reset()
    outs = [c4jax.run_mcts(jax.random.key(i), env, 40, temperature=1.0) for i in range(12)]
    for o in outs:
        assert int(o.visit_counts[int(o.action)]) > 0
    assert len({int(o.action) for o in outs}) > 1
    again = c4jax.run_mcts(jax.random.key(3), env, 40, temperature=1.0)
    assert int(again.action) == int(outs[3].action)


def test_capacity_smaller_than_simulations_loses_no_simulation():
    out = c4jax.run_mcts(jax.random.key(0), c4.from_moves("44"), 60, capacity=10)
    t = row(out.search_tree)
    assert t.node_visits.shape == (10,)
    assert np.all(t.node_visits > 0)  # every node used
    assert t.node_visits[0] == 61 and t.children_visits[0].sum() == 60
    # Edges without a node collected their evaluations: visits and a value.
    collecting = (t.children_index == -1) & (t.children_visits > 0)
    assert collecting.any()
    assert np.all(np.abs(t.children_values[collecting]) <= 1.0)
    # Every backup reached the root: visit sums are consistent at each node.
    for i in range(10):
        assert t.node_visits[i] == 1 + t.children_visits[i].sum() or bool(t.embeddings.done[i])
