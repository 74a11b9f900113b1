"""``c4jax arena``: games between two players, batched and jitted."""

from __future__ import annotations

import os

from c4jax.cli.args import MAX_GAMES, OutputError, UsageError, command_parser, file_arg, int_arg, seed_arg
from c4jax.cli.terminal import print_table
from c4jax.cli.from_args import check_devices, check_writable, make_game

ARENA_EPILOG = """\
players: random, heuristic (win, else block, else random), mcts:N (N simulations
  per move, subtree reuse), flatmc:N (N rollouts per move), perfect (tic-tac-toe)

examples:
  c4jax arena mcts:400 random --games 20
  c4jax arena mcts:1000 flatmc:200 --games 100 --batch-size 20 --out games.jsonl
  c4jax arena perfect mcts:200 --game tictactoe --games 50
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
        "--games", type=int_arg, default=100,
        help="number of games, even: the players alternate moving first (default: 100)",
    )
    p.add_argument("--seed", type=seed_arg, default=0, help="random seed (default: 0)")
    p.add_argument("--batch-size", type=int_arg, default=None, help="games per jitted call, even (default: all)")
    p.add_argument("--out", metavar="JSONL", type=file_arg, default=None, help="write every game as JSON lines")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.add_argument(
        "--devices", type=int_arg, default=None, metavar="K",
        help="local devices to shard the games over (default: all)",
    )
    p.set_defaults(func=run)


def run(args, con, t_start: float) -> int:
    import jax

    from c4jax.arena import arena
    from c4jax.records import write_games
    from c4jax.players import parse_player

    game = make_game(args)
    if args.games < 2 or args.games % 2 or args.games > MAX_GAMES:
        raise UsageError(
            f"--games must be an even number in 2..{MAX_GAMES:,} (the players alternate moving first); "
            f"got {args.games:,}"
        )
    if args.batch_size is not None and (args.batch_size < 2 or args.batch_size % 2):
        raise UsageError(f"--batch-size must be an even number >= 2; got {args.batch_size}")
    players = []
    for spec in (args.player_a, args.player_b):
        try:
            players.append(parse_player(spec))
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
    print_table(con, result.table())
    if args.out:
        try:
            write_games(args.out, result.games)
        except OSError as e:
            raise OutputError(f"cannot write the games {args.out!r}: {e.strerror or e}") from None
        con.print(f"Wrote {len(result.games)} games to {args.out}")
    return 0


