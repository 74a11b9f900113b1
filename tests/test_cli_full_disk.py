"""A disk that fills while ``c4jax arena`` or ``c4jax selfplay`` writes its
records (simulated with a file-size limit, RLIMIT_FSIZE, and SIGXFSZ
ignored, so a write past it fails with EFBIG): one line on stderr, exit 1,
no traceback; while JAX writes the compilation cache: one warning line."""

import os
import resource
import signal
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # a subprocess per case


def _limited():
    resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


@pytest.mark.parametrize("argv", [["arena", "random", "random", "--games", "40"],
                                  ["selfplay", "--games", "4", "-n", "8"]], ids=["arena", "selfplay"])
def test_a_disk_full_while_writing_records_is_one_line_and_exit_1(argv, tmp_path):
    out = tmp_path / "g.jsonl"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    r = subprocess.run([sys.executable, "-m", "c4jax", *argv, "--no-cache", "--out", str(out)], env=env,
                       capture_output=True, text=True, timeout=600, preexec_fn=_limited)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "File too large" in lines[-1] and str(out) in lines[-1], lines
    assert len([line for line in lines if "error" in line]) == 1, lines


@pytest.mark.parametrize("flag, name", [("--dot", "t.dot"), ("--plot", "v.png")], ids=["dot", "plot"])
def test_a_disk_full_while_writing_an_analysis_file_is_one_line_and_exit_1_and_no_file(flag, name, tmp_path):
    out = tmp_path / name
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    r = subprocess.run([sys.executable, "-m", "c4jax", "analyze", "44", "-n", "64", "--no-cache", flag, str(out)],
                       env=env, capture_output=True, text=True, timeout=600, preexec_fn=_limited)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert "File too large" in lines[-1] and str(out) in lines[-1], lines
    assert not out.exists() and list(tmp_path.iterdir()) == []  # nothing partial left behind


def test_a_disk_full_while_writing_the_compilation_cache_is_one_warning_and_the_run_goes_on(tmp_path):
    # JAX warns (two lines) for every program whose cache entry it cannot
    # write; the command says it once.
    cache = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    r = subprocess.run([sys.executable, "-m", "c4jax", "analyze", "15", "--game", "tictactoe", "-n", "8",
                        "--cache-dir", str(cache)], env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
                       capture_output=True, text=True, timeout=600, preexec_fn=_limited)
    assert r.returncode == 0 and "Best move: cell" in r.stdout, r.stderr
    assert r.stderr.splitlines() == [
        f"c4jax: warning: cannot write to the compilation cache {str(cache)!r} (OSError: [Errno 27] File too "
        "large); the run goes on without keeping its programs"], r.stderr


def test_a_closed_output_pipe_ends_with_exit_1_and_no_traceback():
    # Standard output block-buffered, as a user's is.
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}, "PYTHONDONTWRITEBYTECODE": "1"}
    p = subprocess.Popen([sys.executable, "-m", "c4jax", "analyze", "159", "--game", "tictactoe", "-n", "8",
                          "--no-cache", "--json"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # the reader is gone before anything is written
    err = p.stderr.read().decode()
    assert p.wait(timeout=600) == 1 and "Traceback" not in err, err
