"""AlphaZero-style training of the evaluation network from c4jax's own
self-play (Silver et al. 2017, AlphaGo Zero; 2018, AlphaZero).

One iteration:

1. **Self-play**: ``games`` games of the best player against itself
   (:func:`c4jax.selfplay`: batched over every device, subtree reuse,
   Dirichlet noise on the root prior, the first ``temperature_plies`` moves
   sampled from the visit counts).  The best player starts as the default
   rollout search (bootstrapping) and becomes the network once one passes
   the gate.
2. **Replay buffer**: every ply's (planes, visit distribution, result for
   the player to move) joins the last ``buffer`` examples
   (:class:`~c4jax.training.replay.ReplayBuffer`; sampled batches mirrored).
3. **Training**: ``steps`` optax steps on the candidate network: policy
   cross-entropy to the visit distribution plus the value's squared error
   to the result (AdamW), each batch split over the devices the search
   uses (data parallel: the weights whole on each, the gradients summed).
4. **Gate**: the candidate searching ``gate_simulations`` against the best
   player at the same simulations, both with the root noise, ``gate_games`` games in the arena, both
   colours; a score of at least ``gate_threshold`` makes it the best.
5. **Checkpoint**: the whole state, written whole
   (:mod:`c4jax.training.checkpoint`); a killed run resumes at the next
   iteration, with the same keys (iteration ``i`` uses ``fold_in(key(seed),
   i)``), so a resumed run is the run that was not killed.

The loop is deterministic for a seed on one set of devices; ``minutes``
only decides where it stops.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.sharding import NamedSharding, PartitionSpec

from c4jax.games import registry
from c4jax.present.progress import progress_bar
from c4jax.runtime.compiled import GAMES, game_mesh
from c4jax.tools.matches import arena
from c4jax.tools.players import mcts_player
from c4jax.tools.self_play import selfplay
from c4jax.training import checkpoint
from c4jax.training.network import NetConfig, make_net, mixed_value_fn, prior_fn, tempered_prior_fn, value_fn
from c4jax.training.replay import ReplayBuffer, examples_from_records
from c4jax.validation import check_int, check_number

__all__ = ["TrainConfig", "TrainResult", "train", "Trained", "load", "default_config", "default_rollout_weight",
           "CONNECT4_ROLLOUT_WEIGHT", "default_prior_temperature", "CONNECT4_PRIOR_TEMPERATURE"]


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """What a training run does per iteration (see :mod:`c4jax.training.loop`).

    simulations: self-play simulations per move.  games: self-play games per
    iteration.  temperature_plies: plies sampled from the visit counts.
    dirichlet_fraction, dirichlet_alpha: the root noise.  buffer: examples
    kept.  batch_size, steps, learning_rate, weight_decay: the optimiser's
    (AdamW) batches and steps per iteration.  gate_games, gate_simulations,
    gate_threshold: the arena gate (``gate_games`` even).  net: the network's
    size (:class:`~c4jax.training.network.NetConfig`).
    """

    simulations: int = 100
    games: int = 128
    temperature_plies: int = 8
    dirichlet_fraction: float = 0.25
    dirichlet_alpha: float = 1.0
    buffer: int = 100_000
    batch_size: int = 256
    steps: int = 100
    learning_rate: float = 1e-3
    weight_decay: float = 1e-4
    gate_games: int = 40
    gate_simulations: int = 100
    gate_threshold: float = 0.55
    net: NetConfig = NetConfig()

    def validated(self) -> "TrainConfig":
        """``self``; raises ``ValueError`` naming a field outside its range."""
        check_int("simulations", self.simulations, 1, 100_000)
        check_int("games", self.games, 1, 1_000_000)
        check_int("temperature_plies", self.temperature_plies, 0, 100_000)
        check_number("dirichlet_fraction", self.dirichlet_fraction, 0, 1)
        check_number("dirichlet_alpha", self.dirichlet_alpha, 0, lo_open=True)
        check_int("buffer", self.buffer, 1, 100_000_000)
        check_int("batch_size", self.batch_size, 1, 1_000_000)
        check_int("steps", self.steps, 1, 1_000_000)
        check_number("learning_rate", self.learning_rate, 0, 1, lo_open=True)
        check_number("weight_decay", self.weight_decay, 0, 1)
        check_int("gate_games", self.gate_games, 2, 100_000, even=True)
        check_int("gate_simulations", self.gate_simulations, 1, 100_000)
        check_number("gate_threshold", self.gate_threshold, 0, 1)
        self.net.validated()
        return self

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "TrainConfig":
        d = dict(d)
        return cls(**dict(d, net=NetConfig(**d.get("net", {}))))


def default_config(game) -> TrainConfig:
    """The configuration :func:`train` uses for ``game`` by default: for
    Connect 4, one residual block (a search with the network runs several
    times fewer simulations per second than with rollouts, on the CPU); for
    tic-tac-toe, small games and searches (its positions are few), and a
    gate that a network passes by scoring half: good play draws, so a
    network that draws every game replaces the best."""
    if game.name == "tictactoe":
        return TrainConfig(simulations=32, games=64, temperature_plies=2, buffer=20_000, batch_size=128,
                           steps=40, gate_games=20, gate_simulations=32, gate_threshold=0.5,
                           net=NetConfig(channels=16, blocks=1))
    return TrainConfig(net=NetConfig(channels=32, blocks=1))


# The leaf evaluation of a trained Connect 4 network in search: its value
# mixed with a rollout, this much of the rollout (mixed_value_fn).
CONNECT4_ROLLOUT_WEIGHT = 0.7


def default_rollout_weight(game) -> float:
    """How much rollout a trained network's leaf value mixes in by default
    (:func:`~c4jax.training.network.mixed_value_fn`):
    :data:`CONNECT4_ROLLOUT_WEIGHT` for Connect 4 of any size; ``0.0``
    (the network alone) for tic-tac-toe."""
    return 0.0 if game.name == "tictactoe" else CONNECT4_ROLLOUT_WEIGHT


# The prior of a trained Connect 4 network in search: its policy logits over
# this temperature (tempered_prior_fn).
CONNECT4_PRIOR_TEMPERATURE = 2.0


def default_prior_temperature(game) -> float:
    """The temperature of a trained network's prior in search by default
    (:func:`~c4jax.training.network.tempered_prior_fn`):
    :data:`CONNECT4_PRIOR_TEMPERATURE` for Connect 4 of any size; ``1.0``
    (the policy as trained) for tic-tac-toe."""
    return 1.0 if game.name == "tictactoe" else CONNECT4_PRIOR_TEMPERATURE


@dataclasses.dataclass(frozen=True)
class Trained:
    """A trained network, as the search takes it: ``run_mcts(key, env, n,
    **trained.search_options())`` (also :func:`c4jax.mcts_player` and
    :func:`c4jax.selfplay`).  ``iteration`` is the iteration it is from;
    ``game`` the game (its board shape) it was trained for;
    ``rollout_weight`` the share of a rollout in its leaf values
    (:func:`~c4jax.training.network.mixed_value_fn`, ``0.0``: the network's
    value alone); ``prior_temperature`` its prior's temperature
    (:func:`~c4jax.training.network.tempered_prior_fn`, ``1.0``: the
    policy as trained)."""

    game: Any
    params: Any
    iteration: int
    rollout_weight: float = 0.0
    prior_temperature: float = 1.0

    @property
    def value_fn(self) -> Callable:
        """``value_fn(params, key, env)``: the network's value, mixed with a
        rollout by ``rollout_weight``."""
        return mixed_value_fn(self.rollout_weight)

    @property
    def prior_fn(self) -> Callable:
        """``prior_fn(params, env)``: the network's policy logits over
        ``prior_temperature``."""
        return tempered_prior_fn(self.prior_temperature)

    def search_options(self) -> dict[str, Any]:
        """``dict(value_fn=..., prior_fn=..., params=...)``."""
        return dict(value_fn=self.value_fn, prior_fn=self.prior_fn, params=self.params)


@dataclasses.dataclass(frozen=True)
class TrainResult:
    """What :func:`train` returns: the run's folder, its last iteration, the
    learning curve (one dict per iteration, :func:`train`) and the best
    network (:class:`Trained`, ``None`` while the rollout search is best)."""

    folder: str
    iteration: int
    curve: tuple[dict[str, Any], ...]
    best: Trained | None
    candidate: Trained


def _optimizer(config: TrainConfig):
    return optax.adamw(config.learning_rate, weight_decay=config.weight_decay)


@functools.lru_cache(maxsize=8)
def _update_program(config: TrainConfig):
    """Jitted ``(net, opt_state, x, policy, value) -> (net, opt_state,
    policy_loss, value_loss)``: one optimiser step."""
    optimizer = _optimizer(config)

    def loss_fn(net, x, policy, value):
        logits, v = jax.vmap(net)(x)
        policy_loss = jnp.mean(optax.softmax_cross_entropy(logits, policy))
        value_loss = jnp.mean((v - value) ** 2)
        return policy_loss + value_loss, (policy_loss, value_loss)

    def update(net, opt_state, x, policy, value):
        grads, (pl, vl) = jax.grad(loss_fn, has_aux=True)(net, x, policy, value)
        updates, opt_state = optimizer.update(grads, opt_state, net)
        return optax.apply_updates(net, updates), opt_state, pl, vl

    return jax.jit(update)


def _placement(batch_size: int):
    """``(positions, whole)``: the shardings of a training batch (split
    over the devices the search uses, data parallel, where they divide it)
    and of the weights (whole on each)."""
    mesh = game_mesh()
    if batch_size % mesh.size:
        mesh = game_mesh(1)
    return NamedSharding(mesh, GAMES), NamedSharding(mesh, PartitionSpec())


def _game_meta(game) -> dict[str, Any]:
    name, params = registry.spec(game)
    return {"game": name, "game_params": dict(params)}


def _game_label(meta: dict[str, Any]) -> str:
    params = meta.get("game_params") or {}
    return meta["game"] + (f" ({', '.join(f'{k}={v}' for k, v in sorted(params.items()))})" if params else "")


class RunState:
    """A run's whole state between iterations: game, config, seed, the
    networks, optimiser state, replay buffer, iterations done, training
    seconds and curve; ``RunState.load(folder, game)`` reads a checkpoint."""

    def __init__(self, game, config: TrainConfig, seed: int):
        self.game, self.config, self.seed = game, config, seed
        self.net = make_net(jax.random.fold_in(jax.random.key(seed), -1 % 2**31), game, config.net)
        self.opt_state = _optimizer(config).init(self.net)
        self.best = None  # the rollout search until a network passes the gate
        self.best_iteration = -1
        self.buffer = ReplayBuffer(game, config.buffer)
        self.iteration = 0  # iterations finished
        self.seconds = 0.0  # training time, over every session of the run
        self.curve: list[dict[str, Any]] = []

    def meta(self) -> dict[str, Any]:
        return dict(_game_meta(self.game), config=self.config.to_json(), seed=self.seed, iteration=self.iteration,
                    seconds=self.seconds, best_iteration=self.best_iteration, curve=self.curve,
                    buffer_capacity=self.config.buffer)

    def save(self, folder: str) -> None:
        checkpoint.save(folder, self.meta(), {"net": self.net, "opt": self.opt_state, "best": self.best},
                        {f"buffer/{k}": v for k, v in self.buffer.state().items()})

    @classmethod
    def load(cls, folder: str, game=None) -> "RunState":
        meta, arrays = checkpoint.read(folder)
        path = os.path.join(folder, checkpoint.CHECKPOINT)
        try:
            stored = registry.make(meta["game"], **(meta.get("game_params") or {}))
            config = TrainConfig.from_json(meta["config"]).validated()
            seed = int(meta["seed"])
        except (KeyError, TypeError, ValueError) as e:
            raise checkpoint.CheckpointError(f"{path}: its description does not fit c4jax ({e})"[:300]) from None
        if game is not None and game != stored:
            raise checkpoint.CheckpointError(
                f"{folder} holds a run of {_game_label(meta)}, not of {_game_label(_game_meta(game))}: "
                "give that game or another folder")
        state = cls(stored, config, seed)
        state.net = checkpoint.leaves_into(state.net, arrays, "net", path)
        state.opt_state = checkpoint.leaves_into(state.opt_state, arrays, "opt", path)
        state.best_iteration = int(meta["best_iteration"])
        if state.best_iteration >= 0:
            state.best = checkpoint.leaves_into(state.net, arrays, "best", path)
        try:
            state.buffer = ReplayBuffer.from_state(
                stored, config.buffer, {k: arrays[f"buffer/{k}"] for k in ("planes", "policy", "value")})
        except (KeyError, ValueError) as e:
            raise checkpoint.CheckpointError(f"{path}: its replay buffer does not fit ({e})"[:300]) from None
        state.iteration, state.seconds, state.curve = int(meta["iteration"]), float(meta["seconds"]), list(meta["curve"])
        return state


def _gate_player(config: TrainConfig, net=None, name: str | None = None):
    """A side of the gate: ``gate_simulations`` with ``net`` (``None``: the
    rollouts), with the self-play's root noise, so that the games of two
    networks differ (a network's search is otherwise deterministic)."""
    noise = dict(dirichlet_fraction=config.dirichlet_fraction, dirichlet_alpha=config.dirichlet_alpha)
    if net is None:
        return mcts_player(config.gate_simulations, name=name, **noise)
    return mcts_player(config.gate_simulations, value_fn=value_fn, prior_fn=prior_fn, params=net, name=name,
                       **noise)


def _iteration(state: RunState, status: Callable[[str], None]) -> dict[str, Any]:
    """Plays, learns and gates once; returns the curve's entry."""
    config, game = state.config, state.game
    key = jax.random.fold_in(jax.random.key(state.seed), state.iteration)
    k_play, k_train, k_gate = jax.random.split(key, 3)
    entry: dict[str, Any] = {"iteration": state.iteration + 1}

    status(f"self-play: {config.games:,} games, {config.simulations:,} simulations per move")
    t0 = time.perf_counter()
    net_options = {} if state.best is None else dict(value_fn=value_fn, prior_fn=prior_fn, params=state.best)
    played = selfplay(k_play, config.simulations, config.games, game.env_reset(),
                      temperature_plies=config.temperature_plies, dirichlet_fraction=config.dirichlet_fraction,
                      dirichlet_alpha=config.dirichlet_alpha, **net_options)
    x, policy, value = examples_from_records(played.games, game)
    state.buffer.add(x, policy, value)
    t1 = time.perf_counter()

    status(f"training: {config.steps:,} steps of {config.batch_size:,} positions")
    update = _update_program(config)
    positions, whole = _placement(config.batch_size)
    state.net, state.opt_state = jax.device_put((state.net, state.opt_state), whole)
    losses = []
    for step in range(config.steps):
        batch = state.buffer.sample(jax.random.fold_in(k_train, step), config.batch_size)
        batch = jax.device_put(batch, positions)
        state.net, state.opt_state, pl, vl = update(state.net, state.opt_state, *batch)
        losses.append((pl, vl))
    losses = np.asarray(jax.device_get(losses), np.float64)
    t2 = time.perf_counter()

    opponent = "rollouts" if state.best is None else f"net@{state.best_iteration}"
    status(f"gate: {config.gate_games:,} games against the best player ({opponent})")
    result = arena(k_gate, _gate_player(config, state.net, name="candidate"),
                   _gate_player(config, state.best, name="best"), config.gate_games, game.env_reset())
    accepted = result.score >= config.gate_threshold
    if accepted:
        state.best, state.best_iteration = state.net, state.iteration + 1
    t3 = time.perf_counter()

    entry.update(
        games=played.num_games, positions=int(len(x)), buffer=len(state.buffer),
        policy_loss=float(losses[:, 0].mean()), value_loss=float(losses[:, 1].mean()),
        gate_opponent=opponent, gate_score=float(result.score), accepted=bool(accepted),
        selfplay_seconds=t1 - t0, train_seconds=t2 - t1, gate_seconds=t3 - t2,
        selfplay_games_per_second=played.num_games / max(t1 - t0, 1e-9),
        train_steps_per_second=config.steps / max(t2 - t1, 1e-9),
    )
    return entry


def train(
    folder: str,
    game=None,
    *,
    minutes: float | None = None,
    iterations: int | None = None,
    config: TrainConfig | None = None,
    seed: int | None = None,
    overwrite: bool = False,
    progress: bool = False,
    on_iteration: Callable[[dict[str, Any]], None] | None = None,
) -> TrainResult:
    """Trains an evaluation network by self-play, resuming the run in
    ``folder`` if it holds one.

    Args:
      folder: the run's folder (made if missing): ``checkpoint.npz`` after
        every iteration, ``curve.json`` and ``curve.png`` at the end.
      game: the game (board shape) to learn; ``None``: standard Connect 4,
        or the game of the run being resumed.
      minutes: stop after the first iteration that ends past this much
        training time (over every session of the run); ``iterations``: stop
        once this many iterations are done (the run's total).  At least one
        of them.
      config: :class:`TrainConfig` (default :func:`default_config`); a
        resumed run keeps its own and refuses another.
      seed: the run's seed, an int in ``0..2**32 - 1`` (default 0); a resumed
        run keeps its own and refuses another.
      overwrite: start afresh, removing the run in ``folder``.
      progress: show a rich progress bar.
      on_iteration: called with each iteration's curve entry after its
        checkpoint is written.
    Returns:
      :class:`TrainResult`.  A curve entry holds ``iteration``, ``minutes``
      (training time so far), ``games``, ``positions``, ``buffer``,
      ``policy_loss``, ``value_loss``, ``gate_opponent``, ``gate_score``,
      ``accepted``, the seconds of each phase and the speeds.
    Raises:
      ValueError: bad numbers, neither ``minutes`` nor ``iterations``, or
        a ``folder`` whose run is not a whole checkpoint or is of another
        game, seed or configuration (nothing is written then).
    """
    if minutes is None and iterations is None:
        raise ValueError("give minutes or iterations (or both): when the run stops")
    if minutes is not None:
        check_number("minutes", minutes, 0, 1e7, lo_open=True)
    iterations = check_int("iterations", iterations, 1, 10**9, optional=True)
    seed = check_int("seed", seed, 0, 2**32 - 1, optional=True)
    if config is not None:
        config.validated()
    folder = os.fspath(folder)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise ValueError(f"{folder} is not a folder")
    resuming = os.path.isfile(os.path.join(folder, checkpoint.CHECKPOINT)) and not overwrite
    if resuming:
        state = RunState.load(folder, game)
        if config is not None and config != state.config:
            raise ValueError(f"{folder} holds a run with another configuration: leave config out to resume it, "
                             "or overwrite")
        if seed is not None and seed != state.seed:
            raise ValueError(f"{folder} holds a run of seed {state.seed}, not {seed}: leave seed out to resume it")
    else:
        game = game if game is not None else registry.make("connect4")
        registry.spec(game)  # a game the registry can rebuild
        state = RunState(game, (config or default_config(game)).validated(), seed or 0)
        if overwrite:  # the old run's files only: the folder may hold the user's own
            for name in (checkpoint.CHECKPOINT, "curve.json", "curve.png"):
                if os.path.isfile(os.path.join(folder, name)):
                    os.remove(os.path.join(folder, name))
        os.makedirs(folder, exist_ok=True)

    def done() -> bool:
        return ((iterations is not None and state.iteration >= iterations)
                or (minutes is not None and state.seconds >= 60.0 * minutes))

    total = iterations if iterations is not None else None
    with progress_bar(f"training {state.game.name}", total or max(1, round(minutes * 60)), shown=progress) as bar:
        def status(text: str, iteration: int | None = None) -> None:
            bar(state.iteration if total else min(round(state.seconds), round(minutes * 60)),
                description=f"iteration {state.iteration + 1 if iteration is None else iteration}: {text}")

        while not done():
            t0 = time.perf_counter()
            entry = _iteration(state, status)
            state.seconds += time.perf_counter() - t0
            state.iteration += 1
            entry["minutes"] = state.seconds / 60.0
            state.curve.append(entry)
            state.save(folder)
            status("checkpoint written", state.iteration)
            if on_iteration is not None:
                on_iteration(entry)
        bar(state.iteration if total else round(minutes * 60))  # full: the run reached its end
    _write_curve(folder, state.curve)
    return _result(folder, state)


def _result(folder: str, state: RunState) -> TrainResult:
    play = (default_rollout_weight(state.game), default_prior_temperature(state.game))
    best = None if state.best is None else Trained(state.game, state.best, state.best_iteration, *play)
    return TrainResult(folder, state.iteration, tuple(state.curve), best,
                       Trained(state.game, state.net, state.iteration, *play))


def _write_curve(folder: str, curve: list[dict[str, Any]]) -> None:
    import json

    from c4jax.files import write_whole
    from c4jax.present.curves import plot_training

    write_whole(os.path.join(folder, "curve.json"), json.dumps(curve, indent=1))
    if curve:
        plot_training(curve, os.path.join(folder, "curve.png"))


def load(folder: str, game=None, *, which: str = "best", rollout_weight: float | None = None,
         prior_temperature: float | None = None) -> Trained:
    """The network of the training run in ``folder``, for the search:
    ``run_mcts(key, env, n, **load(DIR).search_options())``.

    Args:
      folder: a folder :func:`train` wrote.
      game: ``None``, or the game it must be of (refused otherwise).
      which: ``"best"``: the last network that passed the gate (the
        candidate if none did yet); ``"candidate"``: the latest trained.
      rollout_weight: the share of a rollout in the search's leaf values, a
        number in [0, 1] (:func:`~c4jax.training.network.mixed_value_fn`);
        ``None``: :func:`default_rollout_weight` of the run's game.
      prior_temperature: the temperature of the search's prior, a number
        > 0 (:func:`~c4jax.training.network.tempered_prior_fn`); ``None``:
        :func:`default_prior_temperature` of the run's game.
    Raises:
      ValueError: no checkpoint, a partial or foreign file, another game, a
        bad ``which``, ``rollout_weight`` or ``prior_temperature``.
    """
    if which not in ("best", "candidate"):
        raise ValueError(f"which must be 'best' or 'candidate'; got {which!r}")
    rollout_weight = check_number("rollout_weight", rollout_weight, 0, 1, optional=True)
    prior_temperature = check_number("prior_temperature", prior_temperature, 0, lo_open=True, optional=True)
    state = RunState.load(os.fspath(folder), game)
    play = (default_rollout_weight(state.game) if rollout_weight is None else rollout_weight,
            default_prior_temperature(state.game) if prior_temperature is None else prior_temperature)
    if which == "best" and state.best is not None:
        return Trained(state.game, state.best, state.best_iteration, *play)
    return Trained(state.game, state.net, state.iteration, *play)
