"""A fresh user's break-it session on issue 10's work (a clean install from
the README, then bad input and hostile environments); each finding rerun
here.  The command-line cases run in this process where the command stops
before any search (argument errors), in subprocesses otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace

import jax
import numpy as np
import pytest

import c4jax
from c4jax import connect4 as c4
from c4jax import tictactoe as ttt
from c4jax.cli import common, main

CMD = [sys.executable, "-m", "c4jax.cli"]

# Starting a subprocess with preexec_fn forks this (JAX) process; the child
# execs at once, so JAX's warning about fork does not apply.
pytestmark = pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning")


def _one_line_error(capsys, argv, message):
    code = main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and message in lines[0] and "Traceback" not in err, err
    return lines[0]


# --- huge numbers --------------------------------------------------------------------


# --- environment -------------------------------------------------------------------


# --- output streams and matplotlib (subprocesses) -------------------------------------


# --- game records ----------------------------------------------------------------------


# --- issue 9/11's fresh-user session (2026-12-02) ----------------------------------------


def test_env_fields_with_other_dtypes_or_shapes_are_value_errors():
    """An Env built by hand with float or int16 fields, or fields of two batch
    sizes, used to fail deep inside JAX (a while_loop carry type, a vmap size
    error): now a ValueError naming the field, from the search and the rules."""
    env = c4.from_moves("44")
    as_float = jax.tree.map(lambda x: x.astype(np.float32), env)
    with pytest.raises(ValueError, match=r"Env.stones must be uint32\[2, 7\].*got float32\[2, 7\]"):
        c4jax.run_mcts(jax.random.key(0), as_float, 8)
    as_int16 = jax.tree.map(lambda x: x.astype(np.int16), env)
    with pytest.raises(ValueError, match=r"Env.stones must be uint32"):
        c4.env_step(as_int16, 0)
    batch = jax.tree.map(lambda x: np.stack([x] * 3), env)
    ragged = c4jax.Env(**{**vars(batch), "stones": batch.stones[:2]})
    with pytest.raises(ValueError, match=r"Env.stones must be uint32\[3, 2, 7\].*got uint32\[2, 2, 7\]"):
        c4jax.run_mcts(jax.random.key(0), ragged, 8)
    with pytest.raises(ValueError, match=r"Env.done must be bool\[\]"):
        c4.legal_action_mask(c4jax.Env(**{**vars(env), "done": np.int32(0)}))
    tall = c4.make(40, 7).env_reset()  # two words per column
    assert tall.stones.shape == (2, 14)
    with pytest.raises(ValueError, match=r"Env.stones must be uint32\[2, 14\]"):
        c4.make(40, 7).env_step(c4jax.Env(**{**vars(tall), "stones": tall.stones[:, :7]}), 0)


# --- issue 12's fresh-user session (2026-12-02) -------------------------------------------
