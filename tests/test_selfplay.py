"""Self-play: records with visit counts and values, the same games on 1 and
4 devices (and in this process), two processes with jax.distributed, resume
after a kill, and the errors of the function and of the command.

Every game here is tic-tac-toe at 16 simulations, so the in-process runs
share one compiled program and the command's runs share the session's
compilation cache."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time

import jax
import numpy as np
import pytest

import c4jax
from c4jax.games import tictactoe as ttt

N = 16
GAMES = 8
# Room for every node a game can add (9 plies of N simulations), so that the
# kept subtree is never cut short by a full tree and the visit counts add up
# exactly (a full tree backs simulations up through unexpanded edges).
CAPACITY = N * 9 + 2
SETTINGS = dict(temperature_plies=2, capacity=CAPACITY, batch_size=4)
CMD = [sys.executable, "-m", "c4jax.cli", "selfplay", "--game", "tictactoe", "-n", str(N)]


@pytest.fixture(scope="module")
def run():
    return c4jax.selfplay(jax.random.key(0), N, GAMES, ttt.env_reset(), **SETTINGS)


def lines(records):
    return [r.to_json() for r in records]


def test_records_replay_and_visits_add_up(run, tmp_path):
    assert [r.index for r in run.games] == list(range(GAMES))
    path = tmp_path / "g.jsonl"
    c4jax.write_games(path, run.games)
    back = c4jax.read_games(path)  # replays every game to its result
    assert lines(back) == lines(run.games)
    for r in run.games:
        v = np.array(r.visits)
        assert v.shape == (len(r.moves), 9) and len(r.values) == len(r.moves)
        assert r.x_player == r.o_player == f"mcts:{N}"
        assert v[0].sum() == N  # a fresh tree
        for p in range(1, len(r.moves)):
            # N new simulations on top of the kept subtree, whose root had
            # the visits of the move played, less its own expansion.
            assert v[p].sum() == N + max(v[p - 1][r.moves[p - 1]] - 1, 0), (r.index, p)
        for p in range(SETTINGS["temperature_plies"], len(r.moves)):
            assert v[p][r.moves[p]] == v[p].max()  # then the most visited move
        assert all(-1.0 <= x <= 1.0 for x in r.values)
        if r.result != "draw":
            assert r.values[-1] == 1.0  # the winner's last move: a proven win
    assert run.plies == sum(len(r.moves) for r in run.games) and run.simulations == N * run.plies
    assert {r.result for r in run.games} >= {"draw", "X"}  # sampled openings differ


def test_temperature_plies_sample_the_opening(run):
    openings = {r.moves[:2] for r in run.games}
    assert len(openings) >= 4  # 8 games, the first two plies sampled


def test_a_game_depends_on_its_index_only(run):
    part = c4jax.selfplay(jax.random.key(0), N, [6, 1, 3], ttt.env_reset(), **SETTINGS)
    assert lines(part.games) == lines([run.games[6], run.games[1], run.games[3]])
    # Streamed only (keep_games=False): on_batch gets the same records, the
    # result keeps none but counts them.
    streamed = []
    only = c4jax.selfplay(jax.random.key(0), N, [6, 1, 3], ttt.env_reset(), on_batch=streamed.extend,
                          keep_games=False, **SETTINGS)
    assert only.games == () and only.num_games == 3 and only.summary()["games"] == 3
    assert lines(streamed) == lines(part.games) and only.plies == part.plies


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(games=0), "games must be an int in 1"),
        (dict(games=[1, 1]), "distinct"),
        (dict(games=[1.5]), "must be ints"),
        (dict(temperature=0.0), "temperature must be a finite number > 0"),
        (dict(temperature_plies=-1), "temperature_plies"),
        (dict(devices=99), "devices must be an int in 1.."),
        (dict(batch_size=0), "batch_size"),
        (dict(selection="best"), "selection"),
        (dict(env=ttt.from_moves("14253")), "finished"),
        (dict(keep_games=False), "keep_games=False needs on_batch"),
        (dict(keep_games=0), "keep_games must be True or False"),
    ],
)
def test_bad_arguments(kwargs, match):
    args = dict(games=4, env=ttt.env_reset())
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        c4jax.selfplay(jax.random.key(0), N, args.pop("games"), args.pop("env"), **args)


def test_the_most_games_are_checked_without_a_list_of_their_indices():
    """``games=100_000_000`` (the most) with a bad temperature: refused
    before the search is built and without a list of every index."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="temperature"):
            c4jax.selfplay(jax.random.key(0), N, 100_000_000, ttt.env_reset(), temperature=0.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 50_000_000, peak  # a list of 10**8 ints holds about 3.6 GB


def test_the_seed_is_an_unsigned_32_bit_int():
    # The seed is written into every record, as the command's --seed is: an
    # int in 0..2**32-1 (not a bool).
    for seed in (-1, True, 2**32):
        with pytest.raises(ValueError, match=r"seed must be None or an int in 0\.\.4,294,967,295"):
            c4jax.selfplay(jax.random.key(0), 8, 2, env=ttt.env_reset(), seed=seed)


def _env(tmp_path_factory, **extra):
    return {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "C4JAX_CACHE_DIR": str(tmp_path_factory.getbasetemp() / "selfplay-jax-cache"),
        "COLUMNS": "120",
        "PYTHONWARNINGS": "ignore",
        **extra,
    }


@pytest.mark.slow
def test_the_same_games_on_1_and_4_devices(run, tmp_path_factory, monkeypatch, capsys):
    script = textwrap.dedent(f"""
        import json, jax, c4jax
        from c4jax.games import tictactoe as ttt
        assert len(jax.local_devices()) == 4, jax.local_devices()
        out = {{}}
        for d in (1, 4):
            r = c4jax.selfplay(jax.random.key(0), {N}, {GAMES}, ttt.env_reset(), devices=d, **{SETTINGS!r})
            out[d] = [g.to_json() for g in r.games]
        # The arena shards its games the same way.
        a = c4jax.mcts_player({N})
        for d in (1, 4):
            r = c4jax.arena(jax.random.key(1), a, c4jax.random_player(), 6, ttt.env_reset(), devices=d)
            out[f"arena{{d}}"] = [g.to_json() for g in r.games]
        print(json.dumps(out))
    """)
    flags = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
    p = subprocess.run(
        [sys.executable, "-c", script], env=_env(tmp_path_factory, XLA_FLAGS=flags),
        capture_output=True, text=True, timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["1"] == out["4"] == lines(run.games)
    assert out["arena1"] == out["arena4"] and len(out["arena1"]) == 6
    # The command's --devices beyond the process's devices: one line, exit 2
    # (its main, in this process).
    import c4jax.cli as cli

    monkeypatch.setattr(cli, "enable_compilation_cache", lambda path: None)
    capsys.readouterr()
    out = tmp_path_factory.mktemp("d") / "g.jsonl"
    assert cli.main(CMD[3:] + ["--games", "4", "--devices", "9", "--out", str(out)]) == 2
    n = len(jax.local_devices())
    assert capsys.readouterr().err == (
        f"c4jax selfplay: error: --devices must be in 1..{n} (this process has {n} CPU device{'s' * (n > 1)}); "
        "got 9\n"
    )
    assert not out.exists()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    """A command-line run of 60 games killed (SIGKILL) after its first batch,
    a write cut short appended by hand, then resumed."""
    out = tmp_path_factory.mktemp("resume") / "g.jsonl"
    env = _env(tmp_path_factory)
    args = CMD + ["--games", "60", "--batch-size", "2", "--temperature-plies", "2", "--out", str(out)]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_text().count("\n") >= 2:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    before = out.read_text().splitlines()
    assert 2 <= len(before) < 60, "the run ended before it could be killed"
    with open(out, "a") as f:
        f.write('{"game": "tictactoe", "x": "mcts:16", "o": "mcts')  # a crash mid-write
    r = subprocess.run(args + ["--resume"], env=env, capture_output=True, text=True, timeout=300)
    return before, r, out


@pytest.mark.slow
def test_resume_after_a_kill_plays_only_the_missing_games(resumed):
    before, r, out = resumed
    assert r.returncode == 0, r.stderr[-3000:]
    text = " ".join(r.stdout.split())
    assert "Dropped an unfinished last line" in text
    assert f"{len(before)} games already in" in text and f"playing the {60 - len(before)} missing" in text
    assert f"Wrote {60 - len(before)} games" in text
    # The time is shown to the hundredth: never "0.0 s" beside a rate.
    seconds = float(re.search(r"simulations in ([0-9.]+) s \(compiling", text).group(1))
    assert seconds > 0 and re.search(r"simulations in \d+\.\d\d s", text)
    records = c4jax.read_games(out)
    assert sorted(g.index for g in records) == list(range(60))  # each game once
    assert lines(records[: len(before)]) == before  # the killed run's lines kept as they were
    assert all(g.seed == 0 for g in records)


@pytest.mark.slow
def test_resume_refuses_a_run_of_other_settings(resumed, tmp_path_factory):
    _, _, out = resumed
    args = CMD + ["--games", "60", "--batch-size", "2", "--out", str(out), "--resume"]
    # Three settings other than the run's: the one line names each.
    r = subprocess.run(args + ["--temperature-plies", "3", "--temperature", "0.5", "--prior", "uniform"],
                       env=_env(tmp_path_factory), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "holds games of another run" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    for what in ("--temperature 1.0 there, 0.5 here", "--temperature-plies 2 there, 3 here",
                 "--prior 'heuristic' there, 'uniform' here"):
        assert what in r.stderr, r.stderr
    # Fewer games than the run had: the message names the --games to give.
    r = subprocess.run([a if a != "60" else "30" for a in args] + ["--temperature-plies", "2"],
                       env=_env(tmp_path_factory), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().endswith(
        "game 59 is beyond this run's --games 30 (indices 0..29): give that run's --games (at least 60)"), r.stderr


def _one_line(capsys, argv) -> str:
    from c4jax.cli import main

    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_merge_joins_the_parts_of_the_run_on_its_command_line(run, tmp_path, capsys):
    """``--merge`` checks the parts against its own command line, as
    --resume does (a merge of parts of another seed, budget, temperature or
    number of games is refused, naming what differs), and never replaces an
    existing file."""
    from c4jax.cli import main

    out = tmp_path / "g.jsonl"
    games = [dataclasses.replace(g, seed=0) for g in run.games]  # as the command's --seed 0 records them
    merge = CMD[3:] + ["--games", str(GAMES), "--temperature-plies", "2", "--out", str(out), "--merge"]
    names = ["g.jsonl.part-0-of-2", "g.jsonl.part-1-of-2"]

    def write_parts(change=lambda g: g):
        c4jax.write_games(tmp_path / names[0], [g for g in games if g.index % 2 == 0])
        c4jax.write_games(tmp_path / names[1], [change(g) for g in games if g.index % 2])

    write_parts(lambda g: dataclasses.replace(g, seed=7))
    assert "holds games of another run (tictactoe, mcts:16, seed 7; this run: tictactoe, mcts:16, seed 0)" in (
        _one_line(capsys, merge))
    # Each part holds its own process's share (index % N == I).
    c4jax.write_games(tmp_path / names[0], [g for g in games if g.index % 2])
    c4jax.write_games(tmp_path / names[1], [g for g in games if g.index % 2 == 0])
    assert "part-0-of-2' holds game 1, which process 1 of 2 plays, not process 0" in _one_line(capsys, merge)
    write_parts()
    for extra, what in (
        (["--seed", "1"], "seed 0; this run: tictactoe, mcts:16, seed 1"),
        (["-n", "8"], "(tictactoe, mcts:16, seed 0; this run: tictactoe, mcts:8, seed 0)"),
        (["--temperature", "0.5"], "--temperature 1.0 there, 0.5 here"),
        (["--temperature-plies", "3"], "--temperature-plies 2 there, 3 here"),
        (["--games", "6"], "the parts: game 7 is beyond this run's --games 6 (indices 0..5): give that run's --games (at least 8)"),
        (["--games", "10"], "the parts hold 8 games, not games 0..9 (missing: [8, 9])"),
    ):
        assert what in _one_line(capsys, merge + extra), extra
    assert sorted(os.listdir(tmp_path)) == names  # nothing written, the parts kept
    assert main(merge) == 0
    assert lines(c4jax.read_games(out)) == lines(games) and os.listdir(tmp_path) == ["g.jsonl"]
    # An existing file is never replaced, the merged games or any other.
    write_parts()
    for text in (out.read_text(), "my notes\n"):
        out.write_text(text)
        assert "exists: --merge writes the joined games there" in _one_line(capsys, merge)
        assert out.read_text() == text


def _two_processes(extra_per_process, out, env, cwds=(None, None)):
    port = _free_port()
    procs = [
        subprocess.Popen(
            CMD + ["--out", str(out), "--coordinator", f"localhost:{port}", "--num-processes", "2",
                   "--process-id", str(i)] + extra_per_process[i],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwds[i],
        )
        for i in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    return [p.returncode for p in procs], outs


@pytest.mark.slow
def test_processes_started_with_other_settings_all_stop(tmp_path_factory):
    # Process 1 with another seed and process count, and the same relative
    # --out in another working folder: another file, named in the message.
    folders = [tmp_path_factory.mktemp("mismatch"), tmp_path_factory.mktemp("mismatch")]
    codes, outs = _two_processes(
        [["--games", "4", "--seed", "3"], ["--games", "4", "--seed", "4", "--num-processes", "3"]], "g.jsonl",
        _env(tmp_path_factory), cwds=folders,
    )
    assert codes == [2, 2], outs
    expected = (f"process 1 of this run was started with another --seed, --num-processes, --out than process 0 "
                f"(--out is {folders[0] / 'g.jsonl'} in process 0; {folders[1] / 'g.jsonl'} in process 1): "
                "start every process alike")
    assert all(o[1].strip().endswith(expected) for o in outs), outs
    assert os.listdir(folders[0]) == os.listdir(folders[1]) == []


def test_a_second_run_on_the_same_file_stops_at_its_lock(tmp_path, capsys):
    # A run holds an exclusive lock on its file, so that two runs started at
    # once on one --out cannot both write every game (each index twice).
    import fcntl

    out = tmp_path / "g.jsonl"
    argv = CMD[3:] + ["--games", "2", "--out", str(out)]
    with open(out, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running c4jax selfplay holds it
        for extra in ([], ["--resume"]):
            assert "is being written by another c4jax selfplay (it holds the file's lock)" in (
                _one_line(capsys, argv + extra))
    assert out.read_text() == ""


@pytest.mark.parametrize("address", ["nonsense", "localhost:abc", "localhost:99999", ":1234", "host:0"])
def test_a_bad_coordinator_address_is_one_line(tmp_path, capsys, address):
    # A bad address is one usage line, and no file is made: not a traceback
    # from inside JAX, a segmentation fault or a silent wait for a coordinator.
    argv = CMD[3:] + ["--games", "2", "--out", str(tmp_path / "g.jsonl"), "--coordinator", address,
                      "--num-processes", "2", "--process-id", "0"]
    assert "the coordinator address must be HOST:PORT with a port in 1..65535" in _one_line(capsys, argv)
    assert os.listdir(tmp_path) == []


def test_a_coordinator_host_that_does_not_resolve_is_one_line(tmp_path, capsys):
    argv = CMD[3:] + ["--games", "2", "--out", str(tmp_path / "g.jsonl"), "--coordinator", "no-such-host.invalid:4321",
                      "--num-processes", "2", "--process-id", "1"]
    assert "the coordinator host 'no-such-host.invalid' (of 'no-such-host.invalid:4321') cannot be resolved" in (
        _one_line(capsys, argv))
    assert os.listdir(tmp_path) == []
    from c4jax.runtime.distributed import initialize_distributed

    for host in ("a\x00b", "x" * 300, "a..b"):
        with pytest.raises(ValueError, match="cannot be resolved"):
            initialize_distributed(f"{host}:1234", 2, 1)


@pytest.mark.slow
def test_a_busy_port_is_one_line_and_ctrl_c_or_sigterm_stop_a_waiting_or_playing_process(tmp_path_factory):
    folder = tmp_path_factory.mktemp("signals")
    env = _env(tmp_path_factory)

    def start(index, port, *extra):
        return subprocess.Popen(
            CMD + ["--games", "10", "--out", str(folder / "g.jsonl"), "--coordinator", f"localhost:{port}",
                   "--num-processes", "2", "--process-id", str(index), *extra],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    # Process 0 on a port another program listens on: one line, exit 1.
    with socket.create_server(("", 0)) as busy:
        port = busy.getsockname()[1]
        out, err = start(0, port).communicate(timeout=120)
    assert err.splitlines() == [f"c4jax selfplay: error: process 0 cannot start the run's coordinator on port {port} "
                                "(Address already in use): choose another port in --coordinator"], err
    # Ctrl-C while a process waits for the others to join: exit 130 at once.
    waiting = start(1, _free_port())
    deadline = time.monotonic() + 120
    while "joining the run" not in waiting.stdout.readline() and time.monotonic() < deadline:
        pass
    time.sleep(0.5)
    waiting.send_signal(signal.SIGINT)
    out, err = waiting.communicate(timeout=20)
    assert waiting.returncode == 130 and err == "c4jax selfplay: interrupted\n", (waiting.returncode, err)
    # SIGTERM while both play (jax.distributed would catch it): the process ends.
    port = _free_port()
    procs = [start(i, port, "--games", "4000", "-n", "200", "--batch-size", "4") for i in range(2)]
    part = folder / "g.jsonl.part-1-of-2"
    deadline = time.monotonic() + 120
    while not (part.exists() and part.stat().st_size) and time.monotonic() < deadline:
        time.sleep(0.05)
    procs[1].send_signal(signal.SIGTERM)
    try:
        assert procs[1].wait(timeout=20) == -signal.SIGTERM
    finally:
        for p in procs:
            p.kill()
            p.communicate()
    assert sorted(os.listdir(folder)) == ["g.jsonl.part-0-of-2", "g.jsonl.part-1-of-2"]


def test_resume_refuses_a_part_file_of_another_process(run, tmp_path, capsys):
    from c4jax.cli.args import UsageError
    from c4jax.cli.selfplay import _existing

    part = tmp_path / "g.jsonl.part-0-of-2"
    games = [dataclasses.replace(g, seed=0) for g in run.games]
    c4jax.write_games(part, games[:2])
    this_run = {"game": (games[0].game, games[0].game_params), "player": games[0].x_player, "seed": 0, "settings": games[0].settings,
                "games": GAMES}
    with pytest.raises(UsageError, match="holds game 1, which process 1 of 2 plays, not process 0"):
        _existing(str(part), this_run, (0, 2), None)
    assert len(_existing(str(part), this_run, (0, 1), None)) == 2


def test_a_process_of_a_run_checks_the_merged_file_and_other_runs_parts_before_it_plays(run, tmp_path):
    """Process 0 of 2's checks (in this process, no run joined): another
    process count's part files, an existing --out with and without
    --resume, and a --out that holds every game (nothing to play); each
    refusal before a part file is written."""
    from types import SimpleNamespace

    from c4jax.cli.args import UsageError
    from c4jax.cli.selfplay import _Merged, _release_locks, _start_checks

    games = [dataclasses.replace(g, seed=0) for g in run.games]
    this_run = {"game": (games[0].game, games[0].game_params), "player": games[0].x_player, "seed": 0,
                "settings": games[0].settings, "games": GAMES}
    out = tmp_path / "g.jsonl"
    part = f"{out}.part-0-of-2"

    def check(resume):
        try:
            return _start_checks(SimpleNamespace(devices=None, out=str(out), resume=resume), part, 0, 2, this_run, None)
        finally:
            _release_locks(remove_new_empty=True)

    c4jax.write_games(f"{out}.part-2-of-3", games[:1])
    c4jax.write_games(f"{out}.part-0-of-1", games[:1])
    with pytest.raises(UsageError, match=r"part-0-of-1' and 1 more are parts of a run of another number of "
                                         r"processes, which this run of 2 could not merge: join that run with "
                                         r"--merge and its flags, or remove them$"):
        check(resume=True)
    for p in (f"{out}.part-2-of-3", f"{out}.part-0-of-1"):
        os.remove(p)
    assert check(resume=False) == [] and os.listdir(tmp_path) == []
    c4jax.write_games(out, games[:-1])
    with pytest.raises(UsageError, match=r"exists: a multi-process run would replace it when it merges its parts; "
                                         r"choose another --out \(or pass --resume where it holds this run's merged"):
        check(resume=False)
    with pytest.raises(UsageError, match=r"exists and does not hold every game of this run: a multi-process "
                                         r"--resume continues the part files .*part-I-of-2 and its merge never "
                                         r"replaces a file; resume that file as one process, or choose another"):
        check(resume=True)
    c4jax.write_games(out, games)
    with pytest.raises(_Merged):
        check(resume=True)
    assert os.listdir(tmp_path) == ["g.jsonl"]


@pytest.mark.slow
def test_one_process_failing_its_checks_stops_every_process(tmp_path_factory):
    # Process 1's part is not a file of records: it cannot resume. Every
    # process stops at once with one line (rather than process 0 playing its
    # share and then waiting at the final barrier for a process that left).
    out = tmp_path_factory.mktemp("failing") / "g.jsonl"
    bad = f"{out}.part-1-of-2"
    with open(bad, "w") as f:
        f.write("my notes\n")
    codes, outs = _two_processes([["--games", "4", "--resume"]] * 2, out, _env(tmp_path_factory))
    assert codes == [2, 2], outs
    errors = [o[1].strip().splitlines() for o in outs]
    assert errors[0] == [
        "c4jax selfplay: error: process 1 of this run stopped at its checks (its own error line says why): "
        "no process played; fix that and start every process again"
    ], outs
    assert len(errors[1]) == 1 and f"process 1 of 2: cannot resume from {bad!r}" in errors[1][0], outs
    assert "joining the run at localhost:" in outs[0][0]
    # Process 0 played nothing (no part file): it stopped at the agreement.
    assert not os.path.exists(f"{out}.part-0-of-2") and open(bad).read() == "my notes\n"


@pytest.mark.slow
def test_two_processes_with_jax_distributed_play_every_game_once(resumed, tmp_path_factory):
    _, _, single = resumed
    folder = tmp_path_factory.mktemp("distributed")
    out = folder / "g.jsonl"
    port = _free_port()
    env = _env(tmp_path_factory)
    procs = [
        subprocess.Popen(
            CMD + ["--games", "10", "--batch-size", "2", "--temperature-plies", "2", "--out", str(out),
                   "--coordinator", f"localhost:{port}", "--num-processes", "2", "--process-id", str(i)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for i in range(2)
    ]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [o[1][-2000:] for o in outs]
    assert "Merged 10 games from 2 processes" in " ".join(outs[0][0].split())
    assert "process 1 of 2: 5 games" in " ".join(outs[1][0].split())
    assert sorted(os.listdir(folder)) == ["g.jsonl"]  # the parts joined and removed
    merged = c4jax.read_games(out)
    assert [g.index for g in merged] == list(range(10))
    by_index = {g.index: g.to_json() for g in c4jax.read_games(single)}
    assert lines(merged) == [by_index[i] for i in range(10)]  # the one-process games
    # The same run again onto the merged file: every process refuses (the
    # merge would replace it), and the file stays as it was.
    before = out.read_bytes()
    codes, again = _two_processes([["--games", "10"], ["--games", "10"]], out, env)
    assert codes == [2, 2], again
    assert all("exists: a multi-process run would replace it" in o[1] for o in again), again
    assert out.read_bytes() == before and sorted(os.listdir(folder)) == ["g.jsonl"]
    # With --resume, every process finds every game there: nothing to play.
    codes, again = _two_processes([["--games", "10", "--temperature-plies", "2", "--resume"]] * 2, out, env)
    assert codes == [0, 0], again
    assert all(f"every game of this run is in {out} already: nothing to play"
               in " ".join(o[0].split()) for o in again), again
    assert out.read_bytes() == before and sorted(os.listdir(folder)) == ["g.jsonl"]


def test_bad_flags_give_one_line(tmp_path, tmp_path_factory, monkeypatch, capsys):
    cases = [
        (["--games", "0", "--out", str(tmp_path / "a.jsonl")], "--games must be an int in 1..100,000,000; got 0 (see 'c4jax selfplay --help')"),
        (["--games", "4", "--out", str(tmp_path / "no" / "a.jsonl")], "cannot write the games"),
        (["--games", "4", "--out", str(tmp_path)], "it is a directory"),
        (["--games", "4", "--think", "1", "--out", str(tmp_path / "a.jsonl")], "use --simulations, not --think"),
        (["--games", "4", "-n", "8", "--think", "1", "--out", str(tmp_path / "a.jsonl")], "not allowed with"),
        (["--games", "4", "--coordinator", "localhost:1", "--out", str(tmp_path / "a.jsonl")],
         "a multi-process run needs"),
    ]
    cases.append((["--games", "4", "--out", "/dev/null"], "is not a regular file"))
    existing = tmp_path / "old.jsonl"
    existing.write_text('{"game": "tictactoe"}\n')
    cases.append((["--games", "4", "--out", str(existing)], "exists: pass --resume"))
    cases.append((["--games", "4", "--out", str(existing), "--resume"], "cannot resume from"))
    # --resume on files that are not records (the last line without its
    # newline): refused, and left byte for byte as they were.
    untouched = {}
    for name, text in (("notes.txt", "my notes\nlast line"), ("one.txt", "no newline at all"),
                       ("cut.jsonl", '{"game": "tictactoe"}\nnot a record')):
        (tmp_path / name).write_text(text)
        untouched[tmp_path / name] = text
        cases.append((["--games", "4", "--out", str(tmp_path / name), "--resume"], "cannot resume from"))
    # In this process (main, without switching on the compilation cache,
    # which would move this test session's), one case also end to end.
    import c4jax.cli as cli

    monkeypatch.setattr(cli, "enable_compilation_cache", lambda path: None)
    for args, message in cases:
        base = CMD[3:-2] if "--think" in args else CMD[3:]  # without "python -m c4jax.cli"; without -n
        code = cli.main(base + args)
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1, (args, err)
        assert message in err, (args, err)
    for path, text in untouched.items():
        assert path.read_text() == text, path
    args, message = cases[0]
    r = subprocess.run(CMD + args, env=_env(tmp_path_factory), capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [f"c4jax selfplay: error: {message}"], r.stderr


@pytest.mark.parametrize("value", [" 2", "+2", "2_0", "\uff12", "-1", "two"])
def test_the_process_count_from_the_environment_is_ascii_digits(monkeypatch, value):
    from c4jax.runtime.distributed import initialize_distributed

    monkeypatch.setenv("JAX_NUM_PROCESSES", value)
    with pytest.raises(ValueError, match="JAX_NUM_PROCESSES must be an int >= 0"):
        initialize_distributed()


def test_the_processes_exchange_and_wait_only_in_a_distributed_run():
    from c4jax.runtime.distributed import exchange, wait_for_every_process

    with pytest.raises(RuntimeError, match="jax.distributed is not initialized"):
        exchange("x", "1")
    with pytest.raises(RuntimeError, match="jax.distributed is not initialized"):
        wait_for_every_process("x")


@pytest.mark.parametrize("mine", [True, False])
def test_processes_that_disagree_on_a_merged_out_all_stop(monkeypatch, mine):
    """--resume where process 0 finds every game of the run merged in --out
    and process 1 does not, or the reverse (hosts without one shared file
    system): the agreement stops every process (its exchange stood in for:
    process 1 sends what process 0 does, but the other answer)."""
    import c4jax.runtime.distributed as distributed
    from c4jax.cli.args import UsageError
    from c4jax.cli.selfplay import _agree

    def exchange(name, value):
        other = json.loads(value)
        other[-2] = not other[-2]
        return [value, json.dumps(other)]

    monkeypatch.setattr(distributed, "exchange", exchange)
    run = {"game": ["tictactoe", []], "player": "mcts:16", "seed": 0, "settings": [], "games": 10}
    found = "finds every game of this run in /x/g.jsonl and process 1 does not" if mine else (
        "does not find every game of this run in /x/g.jsonl and process 1 does")
    with pytest.raises(UsageError, match=f"^process 0 {found}: the processes need one shared file system$"):
        _agree(run, "/x/g.jsonl", 2, 0, 2, None, merged=mine)
