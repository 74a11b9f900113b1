"""The search: :func:`run_mcts` and its options, output and tree data.

One module per stage, as mctx's ``_src/`` reads: :mod:`~c4jax.search.tree`
(the tree and its pending writes), :mod:`~c4jax.search.options`,
:mod:`~c4jax.search.selection`, :mod:`~c4jax.search.expansion`,
:mod:`~c4jax.search.backup`, :mod:`~c4jax.search.solver`,
:mod:`~c4jax.search.output`; :mod:`~c4jax.search.stages`, a batch's
search (root, simulations, output) and the loop over simulations;
:mod:`~c4jax.search.stage_programs`, those stages compiled;
:mod:`~c4jax.search.search`, :func:`run_mcts` at the Python boundary;
:mod:`~c4jax.search.anytime`, the driver that runs it against a clock, and
:mod:`~c4jax.search.dot`, the tree as Graphviz text.  Beside them the
batch's layout (:mod:`~c4jax.search.layout`), the PRNG
(:mod:`~c4jax.search.prng`) and the compiled programs a process keeps
(:mod:`~c4jax.search.compiled`, :mod:`~c4jax.search.programs`).  The
public names are re-exported by :mod:`c4jax`.
"""

from c4jax.search.anytime import run_mcts_anytime
from c4jax.search.dot import tree_to_dot
from c4jax.search.options import MCTX_RECIPE, QTRANSFORMS, SELECTIONS, SearchOptions
from c4jax.search.output import SearchOutput
from c4jax.search.search import run_mcts
from c4jax.search.tree import TreeExtraData

__all__ = ["MCTX_RECIPE", "QTRANSFORMS", "SELECTIONS", "SearchOptions", "SearchOutput", "TreeExtraData", "run_mcts", "run_mcts_anytime", "tree_to_dot"]
