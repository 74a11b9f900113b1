"""Rollouts: the playout loop every game shares, its counter-based random
bits, the win-else-block rule that the heuristic rollout, prior and player
share, and the threat-aware rule of the threat-aware rollout.  Trace-time
helpers (no arrays at import).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from c4jax.games.env import Env, result_for_player_to_move, with_opponent_to_move
from c4jax.keys import as_key

__all__ = ["WORD_ACTIONS", "hash_u32", "rollout_random", "pick_uniform", "pick_uniform_word", "seed_from_key",
           "to_bits", "from_bits", "win_else_block", "win_else_block_moves", "winning_moves_of_both", "threat_aware",
           "heuristic_choices", "playout"]

WORD_ACTIONS = 32  # the most moves a set of moves held as one uint32 word has (to_bits)


_GOLDEN = 0x9E3779B9


def hash_u32(x: jax.Array) -> jax.Array:
    """A counter-based 32-bit mixing hash (lowbias32 constants, C. Wellons).

    Args:
      x: ``uint32[...]``.
    Returns:
      ``uint32[...]``, well-mixed bits: consecutive counters give independent
      looking values, so one seed drawn from a JAX key drives a whole rollout.
    """
    x = x.astype(jnp.uint32)
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    x = x ^ (x >> 16)
    return x


def rollout_random(seed: jax.Array, counter: jax.Array) -> jax.Array:
    """``uint32[]`` random bits for step ``counter`` of the rollout ``seed``."""
    return hash_u32(seed + counter.astype(jnp.uint32) * jnp.uint32(_GOLDEN))


def pick_uniform(mask: jax.Array, bits: jax.Array) -> jax.Array:
    """One-hot choice, uniform over the ``True`` entries of ``mask``.

    Args:
      mask: ``bool[A]``, at least one entry ``True`` (A <= 256).
      bits: ``uint32[]`` random bits.
    Returns:
      ``bool[A]`` with exactly one ``True`` (all ``False`` if ``mask`` is).
      The index is ``floor(u * n)`` with ``u`` from the top 24 bits, so the
      bias is below ``2**-24`` per move.
    """
    m = mask.astype(jnp.uint32)
    n = jnp.sum(m, axis=-1, dtype=jnp.uint32)
    r = ((bits >> 8) * n) >> 24
    return mask & (jnp.cumsum(m, axis=-1, dtype=jnp.uint32) == r + 1)


def _move_bits(num_actions: int) -> jax.Array:
    """``uint32[num_actions]``: move ``a``'s bit in a word of moves."""
    return jnp.left_shift(jnp.uint32(1), jnp.arange(num_actions, dtype=jnp.uint32))


def pick_uniform_word(moves: jax.Array, num_actions: int, bits: jax.Array) -> jax.Array:
    """:func:`pick_uniform` of the moves of the word ``moves`` (``uint32[]``,
    :func:`to_bits`), the same choice for the same ``bits``: ``bool[A]`` with
    one ``True``.  Counted with population counts instead of sums, so XLA
    needs no reduction."""
    n = jax.lax.population_count(moves)
    r = ((bits >> 8) * n) >> 24
    bit = _move_bits(num_actions)
    return ((moves & bit) != jnp.uint32(0)) & (jax.lax.population_count(moves & (bit - jnp.uint32(1))) == r)


def seed_from_key(key: jax.Array) -> jax.Array:
    """``uint32[]`` seed for :func:`rollout_random`; the key is consumed."""
    return jax.random.bits(key, (), jnp.uint32)


def to_bits(masks: jax.Array) -> jax.Array:
    """``uint32[...]``: each ``bool[..., A]`` set of moves (``A <=
    WORD_ACTIONS``) as one word, bit ``a`` for move ``a``, in one
    reduction."""
    return jnp.sum(jnp.where(masks, _move_bits(masks.shape[-1]), jnp.uint32(0)), axis=-1, dtype=jnp.uint32)


def from_bits(bits: jax.Array, num_actions: int) -> jax.Array:
    """``bool[num_actions]``: the moves of the word ``bits`` (:func:`to_bits`)."""
    return (bits & _move_bits(num_actions)) != jnp.uint32(0)


def _any(moves: jax.Array) -> jax.Array:
    return moves != jnp.uint32(0) if moves.dtype == jnp.uint32 else jnp.any(moves)


def win_else_block(win: jax.Array, block: jax.Array, otherwise: jax.Array | None) -> jax.Array:
    """The win-else-block rule (the heuristic of the Connect 4 mctx
    tutorials; the heuristic prior, rollout and player): the moves that win
    at once if there is one, else those that block the opponent's immediate
    win if there is one, else ``otherwise`` (``None``: no move, one select
    fewer, as the prior needs).  Sets of moves are ``bool[A]``, or all
    ``uint32[]`` words (:func:`to_bits`)."""
    if otherwise is None:
        return jnp.where(_any(win), win, block)
    return jnp.where(_any(win), win, jnp.where(_any(block), block, otherwise))


def win_else_block_moves(env: Env, otherwise: jax.Array | None, wins=None) -> jax.Array:
    """:func:`win_else_block` of one game's position: its winning moves, and
    the opponent's (the moves that block them), from ``winning_moves``
    (``wins``: :func:`winning_moves_of_both` of ``env``, where the caller has them)."""
    win, block = winning_moves_of_both(env) if wins is None else wins
    return win_else_block(win, block & env.game.legal_action_mask(env), otherwise)


def winning_moves_of_both(env: Env) -> tuple[jax.Array, jax.Array]:
    """One game's ``winning_moves`` for the player to move and for the
    opponent (were it to move): ``(bool[A], bool[A])``, one ``vmap`` ped call
    over both sides (the game's rules traced once)."""
    sides = jax.tree.map(lambda a, b: jnp.stack([a, b]), env, with_opponent_to_move(env))
    wins = jax.vmap(env.game.winning_moves)(sides)
    return wins[0], wins[1]


def threat_aware(legal: jax.Array, opens_theirs: jax.Array, opens_mine: jax.Array) -> jax.Array:
    """The threat-aware rule's choice when no move wins or blocks: the
    ``legal`` moves that open neither a cell where the opponent would
    complete a line (``opens_theirs``) nor one where the mover would (the
    opponent blocks it: ``opens_mine``); else those that avoid the first;
    else ``legal``.  (In Connect 4 a stone opens the cell above it; whoever
    must open such a cell first loses it: zugzwang.)  Sets of moves as in
    :func:`win_else_block`."""
    safe = legal & ~opens_theirs
    keep = safe & ~opens_mine
    return jnp.where(_any(keep), keep, jnp.where(_any(safe), safe, legal))


def heuristic_choices(stones: jax.Array, occupied: jax.Array, legal: jax.Array, *, wins,
                      wins_and_opens=None, word: bool = False) -> jax.Array:
    """``bool[A]``: the moves a heuristic rollout's ply picks among, for the
    mover's ``stones`` and the ``occupied`` cells (the game's bit words) and
    the ``legal`` moves (``bool[A]``): :func:`win_else_block`, else
    ``legal``, or with ``wins_and_opens`` :func:`threat_aware` (hooks as in
    :func:`playout`); ``word``: as a ``uint32[]`` word (:func:`to_bits`).
    Up to :data:`WORD_ACTIONS` moves the rule runs on words: one reduction
    packs every set, so each side's lines are computed once (XLA copies an
    elementwise computation into every reduction that reads it, and the
    rule's tests are reductions)."""
    sides = jnp.stack([stones, stones ^ occupied])  # the mover's stones, the opponent's
    # Both sides' hooks in one vmap: the game's rules traced once.
    if wins_and_opens is None:
        win = jax.vmap(wins, in_axes=(0, None))(sides, occupied)
        sets = [win[0], win[1], legal]
    else:
        win, opened = jax.vmap(wins_and_opens, in_axes=(0, None))(sides, occupied)
        sets = [win[0], win[1], legal, opened[1], opened[0]]
    num_actions = legal.shape[-1]
    packed = num_actions <= WORD_ACTIONS
    if word and not packed:
        raise ValueError(f"a set of {num_actions} moves is not one word (at most {WORD_ACTIONS})")
    if packed:
        sets = list(to_bits(jnp.stack(sets)))
    otherwise = sets[2] if wins_and_opens is None else threat_aware(*sets[2:])
    choices = win_else_block(sets[0], sets[1], otherwise)
    return choices if word or not packed else from_bits(choices, num_actions)


def playout(key, env: Env, *, words, legal, wins, drop, has_line, heuristic: bool,
            wins_and_opens=None) -> jax.Array:
    """The rollout loop every game shares, on mover-relative bit words.

    Game hooks (on the game's word shape ``S``: ``[cols]`` or ``[]``):
    ``words(env) -> (stones_p0, stones_p1)``; ``legal(occ) -> bool[A]``;
    ``wins(stones, occ) -> bool[A]`` (moves completing a line, for the
    heuristic policy); ``drop(onehot bool[A], occ) -> S`` (the new stone's
    bits); ``has_line(stones) -> bool[]``.  ``heuristic``: each move wins at
    once if it can, else blocks (:func:`win_else_block`), else is random;
    with ``wins_and_opens(stones, occ) -> (bool[A], bool[A])`` instead of
    ``wins`` (the moves completing a line, and those that make playable an
    empty cell where ``stones``, as they are before the move, would complete
    one), that random move follows :func:`threat_aware`.  The heuristic's
    hooks are called under ``jax.vmap`` over both players' stones.

    Returns ``float32[]``: the result for the player to move in ``env``
    (+1/0/-1); a finished ``env`` is not played (its own result).
    Raises ``ValueError`` for a ``key`` that is not one PRNG key.
    """
    key = as_key(key)
    if key.shape != ():
        raise ValueError(f"a rollout of one game takes one key; got keys of shape {key.shape}")
    seed = seed_from_key(key)
    p0, p1 = words(env)
    mine = jnp.where(env.to_move == 0, p0, p1)
    max_plies = env.game.max_plies

    def cond(state):
        return ~state[3]

    def body(state):
        cur, occ, ply, _, i, _ = state
        mask, random = legal(occ), rollout_random(seed, i)
        num_actions = mask.shape[-1]
        if num_actions <= WORD_ACTIONS:  # the moves as a word, no reduction to pick one
            moves = (heuristic_choices(cur, occ, mask, wins=wins, wins_and_opens=wins_and_opens, word=True)
                     if heuristic else to_bits(mask))
            onehot = pick_uniform_word(moves, num_actions, random)
        else:
            if heuristic:
                mask = heuristic_choices(cur, occ, mask, wins=wins, wins_and_opens=wins_and_opens)
            onehot = pick_uniform(mask, random)
        bits = drop(onehot, occ)
        me = cur | bits
        occ = occ | bits
        ply = ply + 1
        won = has_line(me)
        # float32 literals: under JAX_ENABLE_X64 a bare 1.0 would be float64.
        result = jnp.where(won, jnp.where(i % 2 == 0, jnp.float32(1), jnp.float32(-1)), jnp.float32(0))
        return (occ ^ me, occ, ply, won | (ply >= max_plies), i + 1, result)

    init = (mine, p0 | p1, env.ply, env.done, jnp.int32(0), result_for_player_to_move(env))
    with jax.named_scope("rollout"):  # names the loop in profiles and compiled programs
        return jax.lax.while_loop(cond, body, init)[5].astype(jnp.float32)
