#!/usr/bin/env bash
# The device check: one run, under 10 minutes, on a machine with a GPU or TPU.
#
#   bash benchmarks/device_check.sh [OUTDIR]        (default: $OUT, else /tmp/c4jax-device-check)
#   QUICK=1 bash benchmarks/device_check.sh         (small shapes: a smoke run, e.g. on a CPU)
#
# Steps, each under its own time limit (590 s in all at most) (a step that fails or runs out is
# reported and the next one runs):
#   1. the machine: accelerator, JAX's devices;
#   2. the tests that matter on an accelerator: rules (tests/test_games.py),
#      search and reuse on hand-worked trees (tests/test_reuse.py), solver
#      soundness on tic-tac-toe (tests/test_ttt_solver.py), self-play records
#      (tests/test_selfplay.py, in-process part);
#   3. search throughput: c4jax run_mcts at batch 1, 1,024, 8,192 and 32,768
#      (benchmarks/search_throughput.py --batches);
#   4. rollout throughput: random playouts/s at the same batches
#      (benchmarks/env_throughput.py --no-pgx; plies/s = playouts/s x about
#      21.3 plies, the mean length of a random Connect 4 game);
#   5. cost against tree size at batch 1 (benchmarks/scaling.py --quick);
#   6. self-play games/s, sims/s, plies/s on every device at batch 1,024,
#      8,192 and 32,768 (benchmarks/selfplay.py);
#   7. two processes sharing the accelerator at once (c4jax selfplay twice):
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
  BATCHES="1,64"; SP_BATCHES="8,64"; SIMS=16; REPEATS=1
else
  BATCHES="1,1024,8192,32768"; SP_BATCHES="1024,8192,32768"; SIMS=200; REPEATS=2
fi
SUMMARY="$OUTDIR/summary.txt"
: > "$SUMMARY"
T0=$(date +%s)

step() {  # step NAME SECONDS COMMAND...
  local name="$1" limit="$2"; shift 2
  local t=$(date +%s)
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

step machine 30 bash -c "nvidia-smi || true; \"$PY\" -c 'import jax, c4jax, mctx; print(jax.__version__, mctx.__version__, jax.default_backend(), jax.devices())'"
step tests 170 "$PY" -m pytest -q -p no:cacheprovider -x -n 0 tests/test_games.py tests/test_reuse.py \
  tests/test_ttt_solver.py tests/test_selfplay.py -k "not devices and not processes and not kill and not flags"
step search_throughput 90 "$PY" benchmarks/search_throughput.py --batches "$BATCHES" --repeats "$REPEATS"
step rollouts 60 "$PY" benchmarks/env_throughput.py --no-pgx --games connect4 --batches "$BATCHES" --repeats "$REPEATS" --min-time 0.1
step scaling 90 "$PY" benchmarks/scaling.py --quick --no-openspiel
step selfplay 90 "$PY" benchmarks/selfplay.py --devices all --batches "$SP_BATCHES" --simulations "$SIMS" --repeats 1 --openspiel-games 0
step two_processes 60 bash -c "
  \"$PY\" -m c4jax.cli selfplay --games 64 -n 32 --out \"$OUTDIR/share0.jsonl\" > \"$OUTDIR/share0.out\" 2>&1 &
  first=\$!
  \"$PY\" -m c4jax.cli selfplay --games 64 -n 32 --out \"$OUTDIR/share1.jsonl\" --seed 1 > \"$OUTDIR/share1.out\" 2>&1
  b=\$?; wait \$first; a=\$?; tail -n 3 \"$OUTDIR/share0.out\" \"$OUTDIR/share1.out\"; [ \$a -eq 0 ] && [ \$b -eq 0 ]"
rm -f "$OUTDIR"/share*.jsonl
echo "=== all steps in $(( $(date +%s) - T0 )) s; summary in $SUMMARY ===" | tee -a "$SUMMARY"
