"""The ``c4jax`` command's usage, checked in this process through
``c4jax.cli.main`` (every case here stops before any search): the help text,
and bad arguments, each refused with one line on stderr, exit status 2 and no
traceback.  The runs of the command itself (subprocesses and terminals) are
in test_cli.py."""

from __future__ import annotations

import os
import pathlib

import jax
import pytest

import c4jax
from c4jax.tools.players import parse_player
from c4jax.cli import main


def _one_line_error(capsys, argv, message):
    code = main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and message in lines[0] and "Traceback" not in err, err
    return lines[0]


def test_arena_help_has_no_doubled_percent(capsys):
    assert main(["arena", "--help"]) == 0
    out = capsys.readouterr().out
    assert "95% Wilson" in out and "%%" not in out


def test_think_is_offered_only_where_a_command_takes_it(capsys):
    # selfplay searches a fixed number of simulations: its help leaves --think
    # out, and the option is refused by name.
    for command in ("play", "analyze", "selfplay"):
        assert main([command, "--help"]) == 0
        out = " ".join(capsys.readouterr().out.split())  # whatever the width
        assert ("--think SECONDS" in out and "in (0, 3600]" in out) == (command != "selfplay"), command
    _one_line_error(capsys, ["selfplay", "--games", "2", "--think", "1", "--out", "x.jsonl"],
                    "use --simulations, not --think")


@pytest.mark.parametrize("argv", [["analyze", "4453"], ["arena", "random", "random"], ["bench"], ["play"],
                                  ["selfplay", "--out", "x.jsonl"], ["train", "--minutes", "1", "--out", "x"]])
def test_an_unknown_option_is_refused_by_the_command_it_was_given_to(argv, capsys):
    command = argv[0]
    line = _one_line_error(capsys, argv + ["--foo", "bar"], "unrecognized arguments: --foo bar")
    assert line == f"c4jax {command}: error: unrecognized arguments: --foo bar (see 'c4jax {command} --help')"
    line = _one_line_error(capsys, ["--foo"], "unrecognized arguments: --foo")
    assert line == "c4jax: error: unrecognized arguments: --foo (see 'c4jax --help')"


def test_a_cache_folder_that_is_a_file_or_a_device_is_one_warning_naming_it(tmp_path, capsys):
    from c4jax.cli.from_args import enable_compilation_cache

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    before = jax.config.jax_compilation_cache_dir
    for path in (blocker, pathlib.Path(os.devnull)):
        assert enable_compilation_cache(path) is None
        assert jax.config.jax_compilation_cache_dir == before
        assert capsys.readouterr().err == (f"c4jax: warning: cannot use the compilation cache {str(path)!r} "
                                           "(not a folder); running without it\n")


# --- numbers past their limits ---------------------------------------------------------


def test_game_counts_past_a_million_are_refused(capsys):
    # A billion games (or a trillion) is refused before anything runs, by the
    # command and by c4jax.arena: their records alone would not fit in memory.
    for n in ("1000000000", "1000000000000"):
        _one_line_error(capsys, ["arena", "random", "random", "--game", "tictactoe", "--games", n],
                        "--games must be an even int in 2..1,000,000; got ")
    with pytest.raises(ValueError, match=r"2\.\.1,000,000"):
        c4jax.arena(jax.random.key(0), c4jax.random_player(), c4jax.random_player(), 10**9)


@pytest.mark.parametrize("spec", ["mcts:10000000000000", "mcts:1000001", "flatmc:10000000000000", "flatmc:100001",
                                  "mcts:-1", "flatmc:-5", "net:-1"])
def test_player_budgets_past_their_limits_are_refused(spec, capsys):
    # At most 1,000,000 simulations (mcts) and 100,000 rollouts (flatmc); a
    # count past int32 is refused by the same rule, by parse_player and by
    # the command.
    with pytest.raises(ValueError, match=r"N must be in 1\.\."):
        parse_player(spec)
    _one_line_error(capsys, ["arena", spec, "random", "--game", "tictactoe", "--games", "2"], "N must be in 1..")


def test_a_long_simulation_count_says_it_is_too_large(capsys):
    _one_line_error(capsys, ["analyze", "44", "-n", "1000000000000"],
                    "--simulations/-n must be an int in 1..1,000,000; got 1000000000000")


@pytest.mark.parametrize(
    "argv,message",
    [
        (["analyze", "4453", "-n", "2000000000"], "must be an int in 1..1,000,000; got 2000000000"),
        (["analyze", "4453", "-n", "\u00b2"], "must be an int in 1..1,000,000, written in ASCII digits; got '\u00b2'"),
    ],
)
def test_cli_rejects_unusable_simulation_counts(argv, message, capsys):
    from c4jax.cli import main

    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_error_lines_do_not_repeat_a_huge_argument(capsys):
    line = _one_line_error(capsys, ["analyze", "x" * 10_000], "bad MOVES")
    assert len(line) < 200, len(line)
    line = _one_line_error(capsys, ["analyze", "44", "--seed", "9" * 5000], "--seed")
    assert len(line) < 200, len(line)


# --- moves, files and outputs ----------------------------------------------------------


def test_a_wide_board_move_list_without_commas_says_how_to_write_it(capsys):
    line = _one_line_error(capsys, ["analyze", "4453", "--cols", "10"], "separated by commas")
    assert "(e.g. 4,4,5,3)" in line


@pytest.mark.parametrize("argv, field", [(["analyze", "10,,3", "--cols", "12", "--rows", "8"], "field 2 of 3"),
                                         (["analyze", ",4,,4,"], "field 1 of 5")])
def test_an_empty_move_field_is_refused_naming_it(argv, field, capsys):
    _one_line_error(capsys, argv, f"{field} between commas is empty")


def test_empty_file_names_are_refused(capsys):
    _one_line_error(capsys, ["analyze", "44", "--plot", ""], "expected a file name")
    _one_line_error(capsys, ["arena", "random", "random", "--out", ""], "expected a file name")


@pytest.mark.parametrize("argv, what", [(["arena", "random", "random", "--games", "2"], "the games"),
                                        (["selfplay", "--games", "2", "-n", "8"], "the games"),
                                        (["train", "--game", "tictactoe", "--minutes", "1"], "the run")],
                         ids=["arena", "selfplay", "train"])
def test_an_out_of_dash_is_refused_and_no_file_named_dash_is_written(argv, what, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _one_line_error(capsys, argv + ["--out", "-"], f"cannot write {what} to '-' (standard output): give a path")
    assert list(tmp_path.iterdir()) == []


def test_analyze_json_of_a_finished_game_writes_nothing_to_stdout(capsys):
    code = main(["analyze", "14253", "--game", "tictactoe", "--json"])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == "" and "finished game" in captured.err
    _one_line_error(capsys, ["analyze", "4453", "--json", "--dot", "-"], "would both write to stdout")


def test_bench_scripts_missing_a_peer_inside_main_is_one_line(tmp_path, capsys):
    """A benchmark script whose main() imports a package that is not
    installed (as env_throughput.py imports pgx inside main) ends in one line
    naming the package, not a traceback."""
    (tmp_path / "env_throughput.py").write_text(
        "def main(argv):\n    import c4jax_no_such_peer_module  # noqa\n"
    )
    _one_line_error(capsys, ["bench", "--scripts", str(tmp_path)], "needs c4jax_no_such_peer_module")


@pytest.mark.parametrize("argv, message", [
    (["analyze", "44", "--plot", "-"], "a plot is an image file"),
    (["analyze", "44", "--plot", "v.gif"], "png, svg, pdf"),
    (["analyze", "44", "--depth", "2"], "go with --dot"),
    (["analyze", "44", "--dot", "t.dot", "--min-visits", "-1"],
     "--min-visits must be an int in 0..2,147,483,647; got -1"),
])
def test_plot_and_dot_flags_are_checked_before_the_search(argv, message, capsys):
    _one_line_error(capsys, argv, message)


_WRITERS = [
    (["arena", "random", "random", "--games", "2", "--out"], "the games"),
    (["selfplay", "--games", "2", "-n", "8", "--out"], "the games"),
    (["analyze", "44", "-n", "8", "--plot"], "the plot"),
    (["analyze", "44", "-n", "8", "--dot"], "the tree"),
]


@pytest.mark.parametrize("argv, what", _WRITERS, ids=["arena", "selfplay", "plot", "dot"])
@pytest.mark.parametrize("place, reason", [("/nonexistent-c4jax-dir/out", "no such directory"),
                                           ("/proc/c4jax-out", "No such file or directory")],
                         ids=["missing", "unwritable"])
def test_every_writing_flag_refuses_a_place_it_cannot_write_before_any_search(argv, what, place, reason, capsys):
    line = _one_line_error(capsys, argv + [place], f"cannot write {what}")
    assert reason in line


@pytest.mark.parametrize("argv, what", _WRITERS[2:], ids=["plot", "dot"])
def test_a_full_device_is_one_line_and_exit_1_not_a_traceback(argv, what, capsys):
    code = main(argv + ["/dev/full"])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and "Traceback" not in err, err
    assert "No space left on device" in lines[0], lines


@pytest.mark.parametrize("argv", [_WRITERS[0][0], _WRITERS[1][0]], ids=["arena", "selfplay"])
def test_records_refuse_a_device_and_an_existing_file_unless_asked(argv, tmp_path, capsys):
    _one_line_error(capsys, argv + ["/dev/full"], "not a regular file")
    existing = tmp_path / "g.jsonl"
    existing.write_text("{}\n")
    line = _one_line_error(capsys, argv + [str(existing)], "exists")
    assert ("--overwrite" if argv[0] == "arena" else "--resume") in line


# --- one spelling per value: nothing repaired into something else -------------------


SEED, SIMS, SECONDS = "--seed must be an int in 0..4,294,967,295", "--simulations/-n must be an int in 1..1,000,000", \
    "--think must be a number in (0, 3600]"


@pytest.mark.parametrize("argv, message", [
    (["analyze", "44", "--seed", " 5"], SEED),
    (["analyze", "44", "--seed", "5\n"], SEED),
    (["analyze", "44", "--seed", "+5"], SEED),
    (["analyze", "44", "--seed", "1_000"], SEED),
    (["arena", "random", "random", "--games", "+2"], "--games must be an even int in 2..1,000,000"),
    (["selfplay", "--out", "g.jsonl", "--devices", " 1"], "--devices must be an int in 1..4096"),
    (["analyze", "44", "-n", " 200"], SIMS),
    (["analyze", "44", "-n", "+200"], SIMS),
    (["analyze", "44", "-n", "+-5"], SIMS),
    (["analyze", "44", "--think", "\u0665"], SECONDS),
    (["analyze", "44", "--think", "\uff12"], SECONDS),
    (["analyze", "44", "--think", "1_0"], SECONDS),
    (["analyze", "44", "--think", " 2"], SECONDS),
    (["analyze", "44", "--think", "+2"], SECONDS),
    (["selfplay", "--out", "g.jsonl", "--temperature", " 1"], "--temperature must be a number in [0.001, 1000]"),
    (["selfplay", "--out", "g.jsonl", "--temperature", "nan"], "--temperature must be a number in [0.001, 1000]"),
    (["selfplay", "--out", "g.jsonl", "--dirichlet-fraction", "0_25"],
     "--dirichlet-fraction must be a number in [0, 1]"),
    (["selfplay", "--out", "g.jsonl", "--dirichlet-alpha", "\uff10.3"],
     "--dirichlet-alpha must be a number in [0.001, 1000]"),
])
def test_numbers_are_ascii_digits_without_spaces_signs_or_separators(argv, message, capsys):
    # int() and float() take spaces around a number, a '+', '_' between
    # digits and (float) any Unicode digit; the command takes ASCII digits
    # with a '-' in front at most (seconds: a decimal point and an exponent too).
    _one_line_error(capsys, argv, f"{message}, written in ASCII digits; got {argv[-1]!r}")


@pytest.mark.parametrize("spec", ["Random", " random", "random ", "MCTS:200", "mcts:200\n", "Flatmc:4", "perfect\t"])
def test_player_specs_are_lower_case_without_spaces(spec, capsys):
    with pytest.raises(ValueError, match="lower case without spaces"):
        parse_player(spec)
    _one_line_error(capsys, ["arena", spec, "random", "--game", "tictactoe", "--games", "2"],
                    "players are written in lower case without spaces (random, heuristic, perfect, mcts:N, flatmc:N, net:N)")
    assert parse_player("mcts:0200").simulations == 200  # leading zeros are still the number


@pytest.mark.parametrize("board, row", [("X../.../.../", "row 4 of 4"), ("/X../.../...", "row 1 of 4"),
                                        ("X..//.../...", "row 2 of 4"), ("X..\n\n...\n...", "row 2 of 4")])
def test_an_empty_board_row_between_separators_is_refused(board, row, capsys):
    with pytest.raises(ValueError, match=f"{row} between '/' or line breaks is empty"):
        c4jax.games.tictactoe.from_board(board)
    _one_line_error(capsys, ["analyze", "--game", "tictactoe", "--board", board], f"bad --board: {row}")
    # Blank lines around the rows and spaces within them are layout.
    assert int(c4jax.games.tictactoe.from_board("\nX . .\n. . .\n. . .\n").ply) == 1


def test_a_board_cell_given_as_a_string_is_one_character():
    with pytest.raises(ValueError, match=r"cell \(row 1, column 1\) is 'X '"):
        c4jax.games.tictactoe.from_board([["X ", ".", "."], [".", ".", "."], [".", ".", "."]])


def test_an_empty_cache_folder_is_refused_not_read_as_the_default(capsys):
    _one_line_error(capsys, ["analyze", "44", "--cache-dir", ""], "--cache-dir: expected a folder, got an empty name")


def test_an_unwritable_output_names_a_read_only_file_system_apart_from_permissions(monkeypatch, tmp_path):
    import os

    from c4jax.cli.args import UsageError
    from c4jax.cli.from_args import check_writable

    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)
    for flag, reason in ((os.ST_RDONLY, "read-only file system"), (0, "permission denied")):
        monkeypatch.setattr(os, "statvfs", lambda folder, flag=flag: type("Stat", (), {"f_flag": flag})())
        with pytest.raises(UsageError, match=f"cannot write the games '.*x.jsonl': {reason}$"):
            check_writable(str(tmp_path / "x.jsonl"), "the games")
    assert not (tmp_path / "x.jsonl").exists()
