"""What is built on the search: players (:mod:`~c4jax.tools.players`),
matches between them (:mod:`~c4jax.tools.matches`, the arena), self-play
for training data (:mod:`~c4jax.tools.self_play`), game records
(:mod:`~c4jax.tools.records`) and their statistics
(:mod:`~c4jax.tools.stats`).
"""
