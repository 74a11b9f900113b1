"""``c4jax train``: AlphaZero-style training of an evaluation network by
self-play (:func:`c4jax.training.train`; needs the ``[train]`` extra)."""

from __future__ import annotations

import os

from c4jax.cli.args import UsageError, command_parser, folder_arg, ranged, seed_arg
from c4jax.cli.from_args import check_writable, make_game
from c4jax.cli.terminal import Interrupted, plain_interrupts, print_line

TRAIN_EPILOG = """\
DIR holds the run: checkpoint.npz after every iteration (the network, the
optimiser, the replay buffer, the learning curve), curve.json and curve.png at
the end.  Run the same command again to go on where it stopped (killed or not);
--minutes counts the training time of the whole run.

examples:
  c4jax train --game tictactoe --minutes 5 --out ttt-net
  c4jax train --minutes 120 --out c4-net
  c4jax arena net:200 mcts:200 --net c4-net --games 200
  c4jax play --net c4-net
"""

MINUTES = ranged(0, 100_000, kind=float, lo_open=True)  # 100,000 minutes: 69 days
SIMULATIONS = ranged(1, 100_000)
GAMES = ranged(1, 1_000_000)


def add_parser(sub, game, search_parent, common) -> None:
    """Adds the ``train`` command to the subparsers ``sub``."""
    p = command_parser(sub, "train", [game, common], TRAIN_EPILOG,
                       help="train an evaluation network by self-play (needs c4jax[train])",
                       description="AlphaZero-style training: self-play with the best player (the rollout search\n"
                       "until a network beats it), a replay buffer, optax steps, a gate in the arena,\n"
                       "a checkpoint after every iteration.")
    p.add_argument("--minutes", type=MINUTES, required=True,
                   help=f"training time of the whole run, {MINUTES.limits}: it stops after the iteration that "
                   "passes it")
    p.add_argument("--out", metavar="DIR", type=folder_arg, required=True, help="the run's folder")
    p.add_argument("--overwrite", action="store_true", help="start afresh, replacing the run in DIR")
    p.add_argument("--seed", type=seed_arg, default=None,
                   help=f"random seed, {seed_arg.limits} (default: 0; a resumed run keeps its own)")
    p.add_argument("--simulations", "-n", type=SIMULATIONS, default=None, metavar="N",
                   help=f"self-play simulations per move, {SIMULATIONS.limits} (default: 100; tic-tac-toe 32)")
    p.add_argument("--games", type=GAMES, default=None,
                   help=f"self-play games per iteration, {GAMES.limits} (default: 128; tic-tac-toe 64)")
    p.set_defaults(func=run)


def run(args, con, t_start: float) -> int:
    import dataclasses

    from c4jax.training import require_extra

    try:
        require_extra()
    except ImportError as e:
        raise UsageError(str(e)) from None
    from c4jax.training.checkpoint import CHECKPOINT, CheckpointError
    from c4jax.training.loop import RunState, default_config, train

    game = make_game(args)
    folder = os.path.expanduser(args.out)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise UsageError(f"--out {args.out!r} is not a folder")
    check_writable(os.path.join(folder, CHECKPOINT) if os.path.isdir(folder) else folder, "the run")
    resuming = os.path.isfile(os.path.join(folder, CHECKPOINT)) and not args.overwrite
    config = None
    if resuming:
        try:
            state = RunState.load(folder, game)
        except CheckpointError as e:
            raise UsageError(f"{e}; --overwrite starts afresh") from None
        changed = [flag for flag, given, kept in (("--simulations", args.simulations, state.config.simulations),
                                                  ("--games", args.games, state.config.games),
                                                  ("--seed", args.seed, state.seed))
                   if given is not None and given != kept]
        if changed:
            raise UsageError(f"{args.out} holds a run with other {', '.join(changed)}: leave "
                             f"{'it' if len(changed) == 1 else 'them'} out to resume it, or pass --overwrite")
        if state.seconds >= 60 * args.minutes:
            plural = "s" if state.iteration != 1 else ""
            print_line(con, f"{args.out} has trained {state.seconds / 60:,.1f} minutes already "
                       f"({state.iteration:,} iteration{plural}): give more --minutes to go on", markup=False)
            return 0
        print_line(con, f"Resuming {args.out} after iteration {state.iteration:,} "
                   f"({state.seconds / 60:,.1f} training minutes)", markup=False)
    else:
        config = default_config(game)
        changes = {k: v for k, v in (("simulations", args.simulations), ("games", args.games)) if v is not None}
        if "simulations" in changes:
            changes["gate_simulations"] = changes["simulations"]
        config = dataclasses.replace(config, **changes)
    last = {}
    try:
        with plain_interrupts():
            result = train(folder, game, minutes=args.minutes, config=config, seed=args.seed,
                           overwrite=args.overwrite, progress=True, on_iteration=last.update)
    except CheckpointError as e:
        raise UsageError(str(e)) from None
    except KeyboardInterrupt:
        done = f"iteration {last['iteration']:,}" if last else "no iteration of this session"
        raise Interrupted(f"the run in {args.out} is kept up to its last checkpoint ({done}); "
                          "the same command resumes it") from None
    best = ("the rollout search (no network has passed the gate yet)" if result.best is None
            else f"the network of iteration {result.best.iteration:,}")
    if result.curve:
        e = result.curve[-1]
        its = f"{result.iteration:,} iteration{'s' if result.iteration != 1 else ''}"
        print_line(con, f"{its}, {e['minutes']:,.1f} training minutes; last gate score "
                   f"{e['gate_score']:.2f} against {e['gate_opponent']}; best player: {best}", markup=False)
    print_line(con, f"Wrote {os.path.join(args.out, CHECKPOINT)}, curve.json and curve.png", markup=False)
    return 0
