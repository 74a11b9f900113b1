"""The "naive mctx recipe" for Connect 4: a speed baseline for c4jax.

Written from its description (the way Connect 4 + mctx tutorials usually do
it), not copied from any project:

* the board is ``int8[6, 7]`` (row 0 at the top): ``+1`` for the first
  player's stones, ``-1`` for the second's, ``0`` empty;
* a win is found by testing all 69 lines of four cells on the whole board;
* the leaf value is one *heuristic* rollout: at each ply play a winning move
  if there is one, else block the opponent's immediate win, else a uniformly
  random legal move; wins and blocks are found by stepping every column
  (``vmap`` of ``step`` over the 7 actions), and every ply draws its move
  with ``jax.random.split`` + ``jax.random.categorical``;
* ``mctx.muzero_policy`` with its default options (temperature 1 and
  Dirichlet noise at the root: the action is a sample; fine for a speed
  benchmark), a fresh tree for every move;
* ``recurrent_fn`` returns the reward of the player who moved, discount -1
  (0 once the game is over), uniform prior logits over the legal moves
  (``finfo(float32).min`` for the others: mctx masks the root only) and the
  rollout value (0 for a finished game).

The usual recipe's operator-precedence bug
(``done | reward != 0 | invalid | full`` parses as
``(done | reward) != (invalid | full)``) is avoided: every comparison is in
parentheses, and stepping a finished game changes nothing
(``python benchmarks/naive_mctx_recipe.py`` checks this and a few other
facts against c4jax's rules).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import mctx
import numpy as np

ROWS, COLS, CONNECT = 6, 7, 4
_NEG = float(jnp.finfo(jnp.float32).min)


def _all_lines() -> np.ndarray:
    """``int32[69, 4]``: flat cell indices ``r * COLS + c`` of every line of four."""
    lines = []
    for r in range(ROWS):
        for c in range(COLS):
            for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
                cells = [(r + i * dr, c + i * dc) for i in range(CONNECT)]
                if all(0 <= rr < ROWS and 0 <= cc < COLS for rr, cc in cells):
                    lines.append([rr * COLS + cc for rr, cc in cells])
    return np.asarray(lines, np.int32)


LINES = _all_lines()
assert LINES.shape == (69, 4)


class State(NamedTuple):
    """One game (a batch adds a leading axis to every field)."""

    board: jax.Array  # int8[6, 7]; +1 first player, -1 second, 0 empty
    player: jax.Array  # int8[], +1 or -1: the player to move
    done: jax.Array  # bool[]


def reset() -> State:
    return State(jnp.zeros((ROWS, COLS), jnp.int8), jnp.int8(1), jnp.bool_(False))


def is_win(board: jax.Array, player: jax.Array) -> jax.Array:
    """Whether ``player`` owns one of the 69 lines."""
    cells = board.reshape(-1)[LINES]  # [69, 4]
    return jnp.any(jnp.all(cells == player, axis=1))


def legal_mask(state: State) -> jax.Array:
    return (state.board[0] == 0) & ~state.done


def step(state: State, action: jax.Array) -> tuple[State, jax.Array]:
    """Plays ``action`` (a column) for ``state.player``.

    Returns ``(next_state, reward)``, the reward of the player who moved: +1
    for a win, -1 for an illegal move (a full column; it ends the game), else
    0.  A finished game comes back unchanged with reward 0.
    """
    board, player, done = state
    empties = jnp.sum(board[:, action] == 0)
    invalid = empties == 0
    row = jnp.maximum(empties - 1, 0)
    new_board = jnp.where(invalid, board, board.at[row, action].set(player))
    won = (~invalid) & is_win(new_board, player)
    full = jnp.all(new_board != 0)
    reward = jnp.where(won, 1.0, jnp.where(invalid, -1.0, 0.0)).astype(jnp.float32)
    # The precedence bug of the seed recipe lives here: every term in parentheses.
    new_done = done | (reward != 0) | invalid | full
    nxt = State(new_board, (-player).astype(jnp.int8), new_done)
    nxt = jax.tree.map(lambda old, new: jnp.where(done, old, new), state, nxt)
    return nxt, jnp.where(done, 0.0, reward)


_ACTIONS = jnp.arange(COLS, dtype=jnp.int32)


def heuristic_moves(state: State) -> jax.Array:
    """``bool[7]``: winning moves if any, else blocking moves if any, else the
    legal moves.  Found by stepping every column for the mover (wins) and for
    the opponent (blocks)."""
    legal = legal_mask(state)
    _, win_r = jax.vmap(step, in_axes=(None, 0))(state, _ACTIONS)
    swapped = state._replace(player=(-state.player).astype(jnp.int8))
    _, block_r = jax.vmap(step, in_axes=(None, 0))(swapped, _ACTIONS)
    wins = legal & (win_r > 0)
    blocks = legal & (block_r > 0)
    return jnp.where(jnp.any(wins), wins, jnp.where(jnp.any(blocks), blocks, legal))


def rollout(key: jax.Array, state: State) -> jax.Array:
    """One heuristic rollout; the result for the player to move in ``state``
    (+1 win, 0 draw, -1 loss; 0 for a finished game)."""
    me = state.player

    def cond(carry):
        return ~carry[1].done

    def body(carry):
        key, s, ret = carry
        key, sub = jax.random.split(key)
        mask = heuristic_moves(s)
        action = jax.random.categorical(sub, jnp.where(mask, 0.0, -jnp.inf))
        mover = s.player
        s, reward = step(s, action)
        ret = ret + reward * jnp.where(mover == me, 1.0, -1.0)
        return key, s, ret

    _, _, ret = jax.lax.while_loop(cond, body, (key, state, jnp.float32(0.0)))
    return ret


def prior_logits(state: State) -> jax.Array:
    return jnp.where(legal_mask(state), 0.0, _NEG).astype(jnp.float32)


def recurrent_fn(params, rng_key, action, embedding: State):
    del params
    keys = jax.random.split(rng_key, action.shape[0])

    def one(key, a, s):
        nxt, reward = step(s, a)
        discount = jnp.where(nxt.done, 0.0, -1.0).astype(jnp.float32)
        value = jnp.where(nxt.done, 0.0, rollout(key, nxt))
        return nxt, reward, discount, prior_logits(nxt), value

    nxt, reward, discount, logits, value = jax.vmap(one)(keys, action, embedding)
    out = mctx.RecurrentFnOutput(reward=reward, discount=discount, prior_logits=logits, value=value)
    return out, nxt


def search(key: jax.Array, states: State, num_simulations: int) -> mctx.PolicyOutput:
    """One move for every game of the batch ``states`` (a fresh tree)."""
    root_key, policy_key = jax.random.split(key)
    batch = states.player.shape[0]
    values = jax.vmap(
        lambda k, s: jnp.where(s.done, 0.0, rollout(k, s))
    )(jax.random.split(root_key, batch), states)
    root = mctx.RootFnOutput(
        prior_logits=jax.vmap(prior_logits)(states), value=values, embedding=states
    )
    return mctx.muzero_policy(
        params=(),
        rng_key=policy_key,
        root=root,
        recurrent_fn=recurrent_fn,
        num_simulations=num_simulations,
        invalid_actions=~jax.vmap(legal_mask)(states),
    )


@functools.partial(jax.jit, static_argnames=("num_simulations",))
def search_action(key: jax.Array, states: State, num_simulations: int) -> jax.Array:
    """``int32[B]``: the sampled move of :func:`search` (jitted)."""
    return search(key, states, num_simulations).action


def batch_reset(batch: int) -> State:
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), reset())


def _self_check() -> None:
    """Checks the rules against c4jax on random games (run as a script)."""
    from c4jax.games import connect4

    rng = np.random.default_rng(0)
    jstep = jax.jit(step)
    jc4 = jax.jit(connect4.env_step)
    for game in range(30):
        s, e = reset(), connect4.env_reset()
        while not bool(s.done):
            legal = np.flatnonzero(np.asarray(legal_mask(s)))
            assert (legal == np.flatnonzero(np.asarray(connect4.legal_action_mask(e)))).all()
            a = int(rng.choice(legal))
            s, r = jstep(s, a)
            e, r2, d2 = jc4(e, a)
            assert float(r) == float(r2) and bool(s.done) == bool(d2), (game, a)
        again, r = jstep(s, 0)
        assert float(r) == 0.0
        assert all(bool(jnp.all(x == y)) for x, y in zip(again, s)), "a finished game changed"
    # An illegal move (full column) ends the game with reward -1.
    s = reset()
    for _ in range(ROWS):
        s, _ = step(s, 0)
    s2, r = step(s, 0)
    assert float(r) == -1.0 and bool(s2.done)
    # The heuristic finds a win and a block.
    s = reset()
    for a in (0, 6, 1, 6, 2):  # first player threatens 0-1-2-3; second to move must block 3
        s, _ = step(s, a)
    assert np.flatnonzero(np.asarray(heuristic_moves(s))).tolist() == [3]
    s, _ = step(s, 5)
    assert np.flatnonzero(np.asarray(heuristic_moves(s))).tolist() == [3]  # now a win
    v = jax.jit(rollout)(jax.random.key(0), s)
    assert float(v) == 1.0
    out = search(jax.random.key(1), batch_reset(2), 32)
    assert out.action.shape == (2,)
    print("naive recipe self-check passed")


if __name__ == "__main__":
    _self_check()
