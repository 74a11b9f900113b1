"""The search: :func:`run_mcts` at the Python boundary
(:mod:`~c4jax.search.run`), MCTS for one game (:mod:`~c4jax.search.mcts`:
the loop over simulations), one module per step as mctx's ``_src/`` reads
(:mod:`~c4jax.search.selection`, :mod:`~c4jax.search.expansion`,
:mod:`~c4jax.search.backup`, :mod:`~c4jax.search.solver`,
:mod:`~c4jax.search.output`), the tree (:mod:`~c4jax.search.tree`) and its
reuse (:mod:`~c4jax.search.reuse`), the leaf values and priors
(:mod:`~c4jax.search.values`), the batch's compiled programs and layout
(:mod:`~c4jax.search.programs`), and the driver that searches against a
clock (:mod:`~c4jax.search.anytime`).
"""

from c4jax.search.anytime import run_mcts_anytime
from c4jax.search.options import MCTX_RECIPE, QTRANSFORMS, SELECTIONS, SearchOptions
from c4jax.search.output import SearchOutput
from c4jax.search.reuse import empty_tree, get_subtree
from c4jax.search.run import run_mcts
from c4jax.search.tree import TreeExtraData
from c4jax.search.values import leaf_value, make_recurrent_fn, make_root_fn, prior_logits

__all__ = ["MCTX_RECIPE", "QTRANSFORMS", "SELECTIONS", "SearchOptions", "SearchOutput", "TreeExtraData", "empty_tree",
           "get_subtree", "leaf_value", "make_recurrent_fn", "make_root_fn", "prior_logits", "run_mcts",
           "run_mcts_anytime"]
