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
