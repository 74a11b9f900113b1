"""What c4jax relies on in mctx (pinned to 0.0.71 in pyproject.toml).

The search core (src/c4jax/search/) builds its own loop on mctx's public
``Tree`` and action-selection functions; these tests pin the parts of their
behaviour it depends on, so that an mctx upgrade that changes them fails here
first, with a message naming the assumption.  (The end-to-end check is
tests/test_search.py::test_same_tree_as_mctx_muzero_policy.)
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np


def test_version_is_the_pinned_one():
    assert mctx.__version__ == "0.0.71"


def test_tree_layout_and_constants():
    names = [f.name for f in dataclasses.fields(mctx.Tree)]
    assert names == [
        "node_visits", "raw_values", "node_values", "parents", "action_from_parent",
        "children_index", "children_prior_logits", "children_visits", "children_rewards",
        "children_discounts", "children_values", "embeddings", "root_invalid_actions",
        "extra_data",
    ]
    assert (mctx.Tree.ROOT_INDEX, mctx.Tree.NO_PARENT, mctx.Tree.UNVISITED) == (0, -1, -1)


def _tree(num_actions=3):
    """An unbatched root with 3 actions: visits (2, 1, 0); action 2 has
    almost all the prior."""
    n = 4
    return mctx.Tree(
        node_visits=jnp.array([4, 2, 1, 0], jnp.int32),
        raw_values=jnp.zeros(n),
        node_values=jnp.array([0.1, 0.5, -0.25, 0.0]),
        parents=jnp.array([-1, 0, 0, -1], jnp.int32),
        action_from_parent=jnp.array([-1, 0, 1, -1], jnp.int32),
        children_index=jnp.array([[1, 2, -1], [-1, -1, -1], [-1, -1, -1], [-1, -1, -1]], jnp.int32),
        children_prior_logits=jnp.zeros((n, num_actions)).at[0, 2].set(10.0),
        children_visits=jnp.array([[2, 1, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]], jnp.int32),
        children_rewards=jnp.array([[0.0, 1.0, 0.0]] + [[0.0] * 3] * 3),
        children_discounts=jnp.array([[-1.0, 0.0, 0.0]] + [[0.0] * 3] * 3),
        children_values=jnp.array([[0.5, -0.25, 0.0]] + [[0.0] * 3] * 3),
        embeddings=jnp.zeros(n),
        root_invalid_actions=jnp.zeros(num_actions),
        extra_data=None,
    )


def test_qvalues_are_reward_plus_discount_times_child_value():
    q = _tree().qvalues(0)
    np.testing.assert_allclose(np.asarray(q), [0.0 - 0.5, 1.0 + 0.0 * -0.25, 0.0])


def test_muzero_action_selection_masks_invalid_actions_at_depth_zero_only():
    qt = functools.partial(mctx.qtransform_by_min_max, min_value=-1.0, max_value=1.0)
    key = jax.random.key(0)
    tree = _tree()
    # Unmasked, the unvisited action 2 wins on its prior.
    assert int(mctx.muzero_action_selection(key, tree, 0, 0, qtransform=qt)) == 2
    masked = tree.replace(root_invalid_actions=jnp.array([0.0, 0.0, 1.0]))
    # c4jax presents every node's illegal actions as the root mask, depth 0.
    assert int(mctx.muzero_action_selection(key, masked, 0, 0, qtransform=qt)) != 2
    # At depth > 0 the mask is ignored: that is why c4jax calls it with 0.
    assert int(mctx.muzero_action_selection(key, masked, 0, 1, qtransform=qt)) == 2


def test_min_max_qtransform_scores_unvisited_actions_as_the_minimum():
    score = mctx.qtransform_by_min_max(_tree(), 0, min_value=-1.0, max_value=1.0)
    np.testing.assert_allclose(np.asarray(score), [0.25, 1.0, 0.0])


def _min_max_normalise(values, lo, hi, eps=1e-8):
    return (values - lo) / max(hi - lo, eps)


def test_parent_and_siblings_qtransform_formula():
    """UCT's transform (``qtransform="parent_and_siblings"``): unvisited
    actions take the minimum of the parent's value and the visited Q-values,
    then everything is min-max normalised over those and the parent's value."""
    tree = _tree()
    q = np.asarray(tree.qvalues(0), np.float64)
    visits = np.array([2, 1, 0])
    parent = 0.1
    safe = np.where(visits > 0, q, parent)
    lo, hi = min(parent, safe.min()), max(parent, safe.max())
    expected = _min_max_normalise(np.where(visits > 0, q, lo), lo, hi)
    got = mctx.qtransform_by_parent_and_siblings(tree, 0)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-6)


def test_completed_by_mix_value_qtransform_formula():
    """Gumbel's transform: unvisited actions completed with the mixed value
    (raw value and the prior-weighted Q of the visited ones, Danihelka et al.
    2022, eq. 33), min-max rescaled, then scaled by (50 + max visits) * 0.1."""
    tree = _tree().replace(raw_values=jnp.array([0.3, 0.0, 0.0, 0.0]))
    q = np.asarray(tree.qvalues(0), np.float64)
    visits = np.array([2.0, 1.0, 0.0])
    logits = np.asarray(tree.children_prior_logits[0], np.float64)
    prior = np.exp(logits - logits.max())
    prior /= prior.sum()
    seen = visits > 0
    weighted_q = (prior * q)[seen].sum() / prior[seen].sum()
    mixed = (0.3 + visits.sum() * weighted_q) / (visits.sum() + 1)
    completed = np.where(seen, q, mixed)
    expected = _min_max_normalise(completed, completed.min(), completed.max()) * (50 + visits.max()) * 0.1
    got = mctx.qtransform_completed_by_mix_value(tree, 0)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-5)


def test_the_key_schedule_of_muzero_policy():
    """The numbers c4jax's search draws with ``solver=False`` equal
    ``mctx.muzero_policy``'s because it splits keys the same way:
    ``_, _, search_key = split(policy_key, 3)``; then per simulation
    ``key, simulate_key, expand_key = split(key, 3)``, and the recurrent
    function gets ``expand_key``.  Pinned here by a recurrent function whose
    value is a draw from the key it is given: simulation ``i`` creates node
    ``i + 1`` (a chain, no terminal states), whose raw value must be the draw
    from the ``i``-th expand key."""
    n = 5
    root = mctx.RootFnOutput(
        prior_logits=jnp.zeros((1, 2)), value=jnp.zeros(1), embedding=jnp.zeros(1)
    )

    def recurrent_fn(params, rng_key, action, embedding):
        value = jax.random.uniform(rng_key, (1,))
        out = mctx.RecurrentFnOutput(
            reward=jnp.zeros(1), discount=jnp.ones(1), prior_logits=jnp.zeros((1, 2)), value=value
        )
        return out, embedding + 1

    policy_key = jax.random.key(7)
    tree = mctx.muzero_policy(None, policy_key, root, recurrent_fn, n, dirichlet_fraction=0.0).search_tree
    _, _, key = jax.random.split(policy_key, 3)
    expected = []
    for _ in range(n):
        key, _, expand_key = jax.random.split(key, 3)
        expected.append(float(jax.random.uniform(expand_key, (1,))[0]))
    np.testing.assert_allclose(np.asarray(tree.raw_values[0, 1 : n + 1]), expected, rtol=1e-6)
