"""How positions and searches are shown: boards as text and for the
terminal (:mod:`~c4jax.present.boards`), a search's moves as values and
tables (:mod:`~c4jax.present.analysis`), the arena's table
(:mod:`~c4jax.present.tables`), the tree as Graphviz text
(:mod:`~c4jax.present.dot`) and progress bars
(:mod:`~c4jax.present.progress`).  rich is imported here and by the CLI
only.
"""
