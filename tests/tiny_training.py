"""The training configuration of the tests: every part of the loop at the
smallest sizes that exercise it (8 self-play games of 8 simulations, three
training steps, a gate of two games, a network of four channels).  One
configuration for the tests of the loop and of ``c4jax train``, so that
their runs of one game build the same programs (the session's compilation
cache holds them once)."""

from c4jax.training import NetConfig, TrainConfig

TINY = TrainConfig(simulations=8, games=8, temperature_plies=2, buffer=500, batch_size=16, steps=3,
                   gate_games=2, gate_simulations=8, net=NetConfig(channels=4, blocks=1, hidden=8))
