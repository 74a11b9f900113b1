#!/usr/bin/env bash
# The device check: one run, under 10 minutes, on a machine with a GPU or TPU.
#
#   bash benchmarks/device_check.sh [OUTDIR]        (default: $OUT, else /tmp/c4jax-device-check)
#   QUICK=1 bash benchmarks/device_check.sh         (small shapes: a smoke run, e.g. on a CPU)
#
# Steps, most important first, each under its own time limit and all of them
# within DEADLINE seconds (default 540; a step gets what is left of it, and is
# skipped when under 20 s are left); a step that fails or runs out is
# reported and the next one runs:
#   1. the machine: accelerator, JAX's devices, one small batched search;
#      then one game from 4453 where c4jax runs it by default (the host's
#      CPU) and, on an accelerator host, on the accelerator;
#   2. search throughput: c4jax run_mcts at batch 1 and 1,024, then 8,192 and
#      32,768 (benchmarks/search_throughput.py --batches), 200 simulations
#      (1,000 at batch 1);
#   3. self-play games/s, sims/s, plies/s on every device at batch 1,024, then
#      8,192 and 32,768, 200 simulations per move (benchmarks/selfplay.py);
#   4. the tests that matter on an accelerator: batch rows equal to single
#      games (first), tree writes by scatter (tests/test_tree_writes.py),
#      subtree reuse (tests/test_reuse.py), hand-worked trees and mctx's trees
#      (tests/test_search.py);
#   5. rollout throughput: random playouts/s at the same batches
#      (benchmarks/env_throughput.py --no-pgx; plies/s = playouts/s x about
#      21.3 plies, the mean length of a random Connect 4 game);
#   6. cost against tree size at batch 1 (benchmarks/scaling.py --quick);
#   7. training: c4jax train for three minutes on Connect 4 (the [train]
#      extra: equinox and optax, from ./.whl where PyPI cannot be reached),
#      its curve (self-play games/s, optimiser steps/s, where the time goes);
#   8. two processes sharing the accelerator at once (c4jax selfplay twice):
#      GPU memory is not preallocated (XLA_PYTHON_CLIENT_PREALLOCATE=false,
#      at most XLA_PYTHON_CLIENT_MEM_FRACTION of it each), so both fit.
# Everything is written to OUTDIR/*.log, and a summary to OUTDIR/summary.txt.
#
# Installing: the project (pip install --no-deps -e .) where it is not
# importable; mctx and other missing pure-Python wheels from ./.whl when
# present (a machine that cannot reach PyPI: see benchmarks/README.md).
set -uo pipefail
cd "$(dirname "$0")/.."
OUTDIR="${1:-${OUT:-/tmp/c4jax-device-check}}"
mkdir -p "$OUTDIR"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1
export XLA_PYTHON_CLIENT_PREALLOCATE="${XLA_PYTHON_CLIENT_PREALLOCATE:-false}"
export XLA_PYTHON_CLIENT_MEM_FRACTION="${XLA_PYTHON_CLIENT_MEM_FRACTION:-0.45}"
export C4JAX_CACHE_DIR="${C4JAX_CACHE_DIR:-$OUTDIR/jax-cache}"
QUICK="${QUICK:-0}"
if [ "$QUICK" = 1 ]; then
  B1=8; B2=16; B3=64; SIMS=16; REPEATS=1
else
  B1=1024; B2=8192; B3=32768; SIMS=200; REPEATS=2
fi
DEADLINE="${DEADLINE:-540}"
SUMMARY="$OUTDIR/summary.txt"
: > "$SUMMARY"
T0=$(date +%s)

step() {  # step NAME SECONDS COMMAND...
  local name="$1" limit="$2"; shift 2
  local t=$(date +%s)
  local left=$(( DEADLINE - (t - T0) ))
  if [ "$left" -lt 20 ]; then
    echo "$name: SKIPPED (${left} s left of ${DEADLINE})" | tee -a "$SUMMARY"; return
  fi
  [ "$limit" -gt "$left" ] && limit="$left"
  echo "=== $name (limit ${limit} s) ===" | tee -a "$SUMMARY"
  timeout --signal=TERM --kill-after=10 "$limit" "$@" > "$OUTDIR/$name.log" 2>&1
  local rc=$?
  local took=$(( $(date +%s) - t ))
  local what="ok"
  [ $rc -ne 0 ] && what="FAILED (exit $rc)"
  [ $rc -eq 124 ] && what="OUT OF TIME"
  echo "$name: $what in ${took} s" | tee -a "$SUMMARY"
  tail -n 40 "$OUTDIR/$name.log" >> "$SUMMARY"
}

if ! "$PY" -c "import c4jax" 2>/dev/null; then
  if ls .whl/*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --target /tmp/c4jax-site .whl/*.whl && export PYTHONPATH="/tmp/c4jax-site:${PYTHONPATH:-}"
  fi
  export PYTHONPATH="$PWD/src:${PYTHONPATH:-}"
fi

step machine 40 bash -c "nvidia-smi || true; \"$PY\" -c '
import jax, c4jax, mctx
from c4jax.games import connect4
print(jax.__version__, mctx.__version__, jax.default_backend(), jax.devices())
envs = jax.tree.map(lambda *xs: jax.numpy.stack(xs), *[connect4.from_moves(m) for m in [\"\", \"4\", \"44\", \"4453\"]])
out = c4jax.run_mcts(jax.random.key(0), envs, 16)
print(\"batch 4 x 16 simulations: actions\", out.action, \"visit counts\", out.visit_counts)
'"
step one_game 90 "$PY" -c '
import time, statistics, jax, c4jax
from c4jax.games import connect4
env = connect4.from_moves("4453")
def rate(label):
    c4jax.run_mcts(jax.random.key(0), env, 1000).action.block_until_ready()
    times = []
    for i in range(5):
        t = time.perf_counter(); out = c4jax.run_mcts(jax.random.key(i), env, 1000)
        out.action.block_until_ready(); times.append(time.perf_counter() - t)
    print(f"{label}: one game from 4453, 1,000 simulations: {1000 / statistics.median(times):,.0f} sims/s on", out.action.devices())
rate("default (the host CPU where the default backend is an accelerator)")
if jax.default_backend() != "cpu":
    with jax.default_device(jax.devices()[0]):
        rate("jax.default_device(the accelerator)")
'
step search_1 120 "$PY" benchmarks/search_throughput.py --batches "1,$B1" --repeats "$REPEATS"
step selfplay_1 90 "$PY" benchmarks/selfplay.py --devices all --batches "$B1" --simulations "$SIMS" --repeats 1 --openspiel-games 0
step search_2 120 "$PY" benchmarks/search_throughput.py --batches "$B2,$B3" --repeats "$REPEATS"
step selfplay_2 150 "$PY" benchmarks/selfplay.py --devices all --batches "$B2,$B3" --simulations "$SIMS" --repeats 1 --openspiel-games 0
step tests 150 "$PY" -m pytest -q -p no:cacheprovider -n 0 \
  tests/test_search.py::test_same_key_same_result_and_batch_rows_equal_single_games tests/test_tree_writes.py \
  tests/test_reuse.py tests/test_search.py -k "batch_rows_equal or test_tree_writes or test_reuse or hand_worked or same_tree_as_mctx"
step rollouts 40 "$PY" benchmarks/env_throughput.py --no-pgx --games connect4 --batches "1,$B1,$B2,$B3" --repeats "$REPEATS" --min-time 0.1
step scaling 60 "$PY" benchmarks/scaling.py --quick --no-openspiel
TRAIN_MINUTES=3; [ "$QUICK" = 1 ] && TRAIN_MINUTES=0.2
step training 240 bash -c "\"$PY\" -m c4jax.cli train --minutes $TRAIN_MINUTES --out \"$OUTDIR/train\" --overwrite &&
  \"$PY\" -c 'import json, sys; [print(json.dumps(e)) for e in json.load(open(sys.argv[1]))]' \"$OUTDIR/train/curve.json\""
step two_processes 60 bash -c "
  \"$PY\" -m c4jax.cli selfplay --games 64 -n 32 --out \"$OUTDIR/share0.jsonl\" > \"$OUTDIR/share0.out\" 2>&1 &
  first=\$!
  \"$PY\" -m c4jax.cli selfplay --games 64 -n 32 --out \"$OUTDIR/share1.jsonl\" --seed 1 > \"$OUTDIR/share1.out\" 2>&1
  b=\$?; wait \$first; a=\$?; tail -n 3 \"$OUTDIR/share0.out\" \"$OUTDIR/share1.out\"; [ \$a -eq 0 ] && [ \$b -eq 0 ]"
rm -f "$OUTDIR"/share*.jsonl
echo "=== all steps in $(( $(date +%s) - T0 )) s; summary in $SUMMARY ===" | tee -a "$SUMMARY"
