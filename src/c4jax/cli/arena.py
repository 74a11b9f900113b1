"""``c4jax arena``: games between two players, batched and jitted."""

from __future__ import annotations

import os

from c4jax.cli.args import (
    OutputError, UsageError, add_net_arg, command_parser, devices_arg, file_arg, games_arg, seed_arg,
)
from c4jax.cli.terminal import Interrupted, plain_interrupts, print_line, print_table
from c4jax.cli.from_args import check_devices, check_writable, make_game, network_options

ARENA_EPILOG = """\
players: random, heuristic (win, else block, else random), mcts:N (N simulations
  per move, subtree reuse), flatmc:N (N rollouts per move), perfect (tic-tac-toe),
  net:N (N simulations per move with the network of --net DIR)

examples:
  c4jax arena mcts:400 random --games 20
  c4jax arena mcts:1000 flatmc:200 --games 100 --batch-size 20 --out games.jsonl
  c4jax arena perfect mcts:200 --game tictactoe --games 50
  c4jax arena net:200 mcts:200 --net c4-net --games 200
"""


def add_parser(sub, game, search_parent, common) -> None:
    """Adds the ``arena`` command to the subparsers ``sub``."""
    p = command_parser(sub, "arena", [game, common], ARENA_EPILOG,
                       help="play games between two players",
                       description="Play G games between two players (they alternate moving first), batched and\n"
                       "jitted; show a progress bar, then wins/draws/losses with 95% Wilson intervals and Elo.")
    p.add_argument("player_a", metavar="PLAYER_A", help="e.g. mcts:1000")
    p.add_argument("player_b", metavar="PLAYER_B", help="e.g. random")
    p.add_argument(
        "--games", type=games_arg, default=100,
        help=f"number of games, {games_arg.limits}: the players alternate moving first (default: 100)",
    )
    p.add_argument("--seed", type=seed_arg, default=0, help=f"random seed, {seed_arg.limits} (default: 0)")
    p.add_argument("--batch-size", type=games_arg, default=None,
                   help=f"games per jitted call, {games_arg.limits}; more than --games plays them all at once "
                   "(default: all)")
    p.add_argument("--out", metavar="JSONL", type=file_arg, default=None, help="write every game as JSON lines")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.add_argument(
        "--devices", type=devices_arg, default=None, metavar="K",
        help=f"local devices to shard the games over, {devices_arg.limits} and at most this process's (default: all)",
    )
    add_net_arg(p.add_argument_group("network"), what="net:N searches with")
    p.set_defaults(func=run)


def run(args, con, t_start: float) -> int:
    import jax

    from c4jax.tools.matches import arena
    from c4jax.tools.records import write_games
    from c4jax.present.tables import arena_table
    from c4jax.tools.players import parse_player

    game = make_game(args)  # --games and --batch-size: their types' ranges
    if args.net is not None and "net:" not in (args.player_a + args.player_b):
        raise UsageError("--net is the network of a net:N player: name one (e.g. net:200)")
    network = network_options(args, game)
    players = []
    for spec in (args.player_a, args.player_b):
        try:
            players.append(parse_player(spec, network=network))
        except ValueError as e:
            raise UsageError(str(e)) from None
        if spec.strip().lower() == "perfect" and not hasattr(game, "perfect_action_values"):
            raise UsageError("the perfect player plays tic-tac-toe only: add --game tictactoe")
    if args.out:
        check_writable(args.out, "the games")
        if os.path.exists(args.out) and not os.path.isfile(args.out):
            raise UsageError(f"--out {args.out!r} is not a regular file (a device or a pipe): give a file name")
        if os.path.exists(args.out) and os.path.getsize(args.out) and not args.overwrite:
            raise UsageError(f"{args.out!r} exists: pass --overwrite to replace it, or choose another --out")
    check_devices(args.devices)
    try:
        with plain_interrupts():
            result = arena(
                jax.random.key(args.seed),
                players[0],
                players[1],
                args.games,
                game.env_reset(),
                batch_size=args.batch_size,
                progress=True,
                devices=args.devices,
            )
    except KeyboardInterrupt:
        if args.out:  # written whole at the end, so not at all
            raise Interrupted(f"no game was written to {args.out} (the arena writes its games once all are "
                              "played)") from None
        raise
    print_table(con, arena_table(result))
    if args.out:
        try:
            write_games(args.out, result.games)
        except OSError as e:
            raise OutputError(f"cannot write the games {args.out!r}: {e.strerror or e}") from None
        print_line(con, f"Wrote {len(result.games):,} games to {args.out}", markup=False)
    return 0


