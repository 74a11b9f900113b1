"""``c4jax train`` and ``--net DIR`` (play, analyze, arena), through ``main``
in this process: a run written and resumed, its network playing, and bad
input refused with one line, exit 2 and nothing written."""

import os

import pytest

pytest.importorskip("equinox", reason="the [train] extra")  # CI installs it (README's test command)

import c4jax.cli as cli  # noqa: E402
from c4jax.training import loop  # noqa: E402
from c4jax.training.checkpoint import CHECKPOINT  # noqa: E402
from tiny_training import TINY  # noqa: E402

# Small: 8 games of 8 simulations, the gate at 8 simulations too; the rest
# of a new run's configuration is the tests' tiny one (below).
TRAIN = ["train", "--game", "tictactoe", "-n", "8", "--games", "8", "--minutes", "0.001"]


@pytest.fixture(autouse=True, scope="module")
def _tiny_runs():
    """A new run's configuration is the tests' tiny one (the command's
    flags still replace its simulations and games): the commands here
    check what ``c4jax train`` says, writes and refuses, not the default
    sizes of the loop."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(loop, "default_config", lambda game: TINY)
        yield


def _main(monkeypatch, capsys, args):
    monkeypatch.setattr(cli, "enable_compilation_cache", lambda path: None)
    code = cli.main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli-train") / "net"
    mp = pytest.MonkeyPatch()
    mp.setattr(cli, "enable_compilation_cache", lambda path: None)
    try:
        assert cli.main(TRAIN + ["--out", str(folder)]) == 0
    finally:
        mp.undo()
    return folder


def test_train_writes_a_run_and_says_what_it_did(run_dir):
    assert sorted(os.listdir(run_dir)) == [CHECKPOINT, "curve.json", "curve.png"]


def test_train_again_resumes_and_refuses_other_settings(run_dir, monkeypatch, capsys):
    code, out, _ = _main(monkeypatch, capsys, TRAIN + ["--out", run_dir])
    assert code == 0 and "has trained" in out and "give more --minutes" in out
    before = (run_dir / CHECKPOINT).read_bytes()
    code, _, err = _main(monkeypatch, capsys, TRAIN + ["--out", run_dir, "--seed", "5"])
    assert code == 2 and err.count("\n") == 1 and "other --seed" in err
    code, _, err = _main(monkeypatch, capsys, ["train", "--minutes", "1", "--out", run_dir])
    assert code == 2 and err.count("\n") == 1 and "holds a run of tictactoe, not of connect4" in err
    assert err.count("--overwrite") == 1  # train's own hint, once
    assert (run_dir / CHECKPOINT).read_bytes() == before


def test_overwrite_starts_afresh(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "net"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    (folder / CHECKPOINT).write_bytes(b"not a checkpoint")
    code, out, err = _main(monkeypatch, capsys, TRAIN + ["--out", folder, "--overwrite"])
    assert code == 0, err
    assert sorted(os.listdir(folder)) == [CHECKPOINT, "curve.json", "curve.png", "notes.txt"]
    assert "\n1 iteration, " in "\n" + out and "iteration 1: checkpoint written" in out and "Wrote" in out, out


def test_the_network_plays_in_the_arena_and_analyzes(run_dir, monkeypatch, capsys):
    code, out, err = _main(monkeypatch, capsys, ["arena", "net:8", "mcts:8", "--net", run_dir, "--game",
                                                 "tictactoe", "--games", "2"])
    assert code == 0, err
    assert "net:8" in out
    code, out, err = _main(monkeypatch, capsys, ["analyze", "12", "--game", "tictactoe", "-n", "32", "--net",
                                                 run_dir])
    assert code == 0, err
    assert "<- best" in out


@pytest.mark.parametrize("args, message", [
    (["arena", "net:8", "mcts:8", "--game", "tictactoe", "--games", "2"], "give one (--net DIR)"),
    (["arena", "mcts:8", "random", "--net", "{net}", "--game", "tictactoe", "--games", "2"], "name one"),
    (["arena", "net:8", "mcts:8", "--net", "{net}", "--games", "2"], "holds a run of tictactoe"),
    (["analyze", "44", "--net", "{net}"], "not of connect4 (cols=7, connect=4, rows=6): give that game or another "
     "folder"),
    (["analyze", "44", "--net", ""], "--net: expected a folder, got an empty name"),
    (["train", "--minutes", "1", "--out", ""], "--out: expected a folder, got an empty name"),
    (["analyze", "44", "--net", "{tmp}"], "holds no training run"),
    (["analyze", "44", "--net", "{tmp}/none"], "none is no such folder: give the folder of a training run"),
    (["play", "--net", "{partial}/checkpoint.npz"], "checkpoint.npz is a file: give the folder of a training run"),
    (["analyze", "5", "--game", "tictactoe", "--net", "{partial}"], "not a whole training checkpoint"),
    (["train", "--minutes", "1", "--out", "{partial}"], "not a whole training checkpoint"),
    (["train", "--minutes", "0", "--out", "{tmp}/new"], "--minutes"),
    (["train", "--minutes", "1", "--out", "{tmp}/new", "-n", "0"], "--simulations"),
    (["train", "--minutes", "1"], "--out"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_written(run_dir, tmp_path, monkeypatch, capsys, args, message):
    partial = tmp_path / "partial"
    partial.mkdir()
    data = (run_dir / CHECKPOINT).read_bytes()
    (partial / CHECKPOINT).write_bytes(data[: len(data) // 3])
    argv = [a.format(net=run_dir, tmp=tmp_path, partial=partial) for a in args]
    code, _, err = _main(monkeypatch, capsys, argv)
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err and message in err, err
    assert "--overwrite" not in err or argv[0] == "train"  # no other command has it
    assert "--no-cache" not in err  # the cache folder's hint only
    assert sorted(os.listdir(tmp_path)) == ["partial"]
    assert sorted(os.listdir(partial)) == [CHECKPOINT]
