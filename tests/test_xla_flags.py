"""c4jax.runtime.xla_flags: the CPU loop threshold and the CPU devices that ``import
c4jax`` adds to XLA_FLAGS, checked on the compiled program (a loop compiled
into one kernel is a ``call`` with ``xla_cpu_small_call``) and on
``jax.devices``, in fresh interpreters."""

import json
import os
import subprocess
import sys

import pytest

from c4jax.runtime import xla_flags
from c4jax.runtime.xla_flags import (
    DEVICES_ENV,
    DEVICES_KEY,
    LLVM_NO_LSR,
    LOOP_BYTES,
    THRESHOLD_KEY,
    flags_with_cpu_devices,
    flags_with_llvm_option,
    flags_with_loop_threshold,
)

ENTRY = f"--xla_backend_extra_options={THRESHOLD_KEY}={LOOP_BYTES}"
CORES = len(os.sched_getaffinity(0))
# What import c4jax adds on this machine: the threshold and LLVM's options
# (without a GPU or TPU plugin), and one CPU device per core.
EXTRA = ENTRY + ("" if xla_flags.accelerator_plugin_installed() else f",{LLVM_NO_LSR}")
ADDED = EXTRA + (f" {DEVICES_KEY}={CORES}" if CORES > 1 else "")


@pytest.mark.parametrize(
    "flags, expected",
    [
        ("", ENTRY),
        ("--xla_backend_optimization_level=0", f"--xla_backend_optimization_level=0 {ENTRY}"),
        # An existing map entry gets the key appended (a second entry would replace it).
        ("--xla_backend_extra_options=a=1 --x=2", f"--xla_backend_extra_options=a=1,{THRESHOLD_KEY}={LOOP_BYTES} --x=2"),
        ("--xla_backend_extra_options=", f"--xla_backend_extra_options={THRESHOLD_KEY}={LOOP_BYTES}"),
        # The user's own threshold wins, whatever its value.
        (f"--xla_backend_extra_options={THRESHOLD_KEY}=0", f"--xla_backend_extra_options={THRESHOLD_KEY}=0"),
    ],
)
def test_flags_with_loop_threshold(flags, expected):
    assert flags_with_loop_threshold(flags) == expected


@pytest.mark.parametrize(
    "flags, expected",
    [
        ("", f"--xla_backend_extra_options={LLVM_NO_LSR}"),
        ("--xla_backend_extra_options=a=1 --x=2", f"--xla_backend_extra_options=a=1,{LLVM_NO_LSR} --x=2"),
        # The user's own setting of the option wins, whatever its value.
        ("--xla_backend_extra_options=-disable-lsr=false", "--xla_backend_extra_options=-disable-lsr=false"),
        ("--xla_backend_extra_options=a=1,-disable-lsr", "--xla_backend_extra_options=a=1,-disable-lsr"),
        # Another option whose name starts the same is another option.
        ("--xla_backend_extra_options=-disable-lsr-x", f"--xla_backend_extra_options=-disable-lsr-x,{LLVM_NO_LSR}"),
    ],
)
def test_flags_with_llvm_option(flags, expected):
    assert flags_with_llvm_option(flags) == expected


def test_the_llvm_option_is_left_out_where_an_accelerator_plugin_is_installed(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "jax_plugins" else real(name, *a))
    assert xla_flags.accelerator_plugin_installed()
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert not xla_flags.accelerator_plugin_installed()


@pytest.mark.parametrize("bad", [-1, 1.5, True, "8"])
def test_a_bad_threshold_is_a_value_error(bad):
    with pytest.raises(ValueError, match="threshold must be an int >= 0"):
        flags_with_loop_threshold("", bad)


_PROBE = r"""
import json, os, re, sys, warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    if sys.argv[1] == "late":
        import jax.numpy as jnp
        jnp.ones(2).block_until_ready()
    import jax
    import c4jax
    from c4jax.games import connect4
env = connect4.from_moves("4453")
hlo = jax.jit(lambda k: connect4.heuristic_rollout(k, env)).lower(jax.random.key(0)).compile().as_text()
print(json.dumps(dict(
    status=c4jax.runtime.xla_flags.loop_threshold_status(),
    in_effect=c4jax.runtime.xla_flags.threshold_in_effect(),
    flags=os.environ.get("XLA_FLAGS", ""),
    cpu_devices=len(jax.devices("cpu")),
    small_loops=len(re.findall(r'xla_cpu_small_call="true"', hlo)),
    warnings=[str(w.message) for w in caught if "c4jax" in str(w.message)],
)))
"""


def _probe(mode="early", **env):
    environ = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", xla_flags.OPT_OUT, DEVICES_ENV)}
    environ.update(env)
    out = subprocess.run([sys.executable, "-c", _PROBE, mode], env=environ, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_raises_the_threshold_and_the_heuristic_rollout_becomes_one_kernel():
    """The heuristic rollout's loop over plies (its body counts over XLA's
    default 1,024 bytes) compiles into one kernel only with the threshold:
    two small loops (the key's hash and the plies) against one."""
    raised = _probe()
    assert raised["status"] == "set" and raised["in_effect"] == LOOP_BYTES
    assert raised["flags"] == ADDED and raised["warnings"] == []
    assert raised["cpu_devices"] == CORES
    default = _probe(**{xla_flags.OPT_OUT: "0"})
    assert default["status"] == "opted out" and default["in_effect"] is None and default["flags"] == ""
    assert default["cpu_devices"] == 1
    assert (raised["small_loops"], default["small_loops"]) == (2, 1)


def test_the_users_threshold_is_kept():
    user = _probe(XLA_FLAGS=f"--xla_backend_extra_options={THRESHOLD_KEY}=0")
    assert user["status"] == "user" and user["in_effect"] == 0
    assert user["flags"].split()[0].startswith(f"--xla_backend_extra_options={THRESHOLD_KEY}=0")
    assert user["small_loops"] == 0  # 0 turns the pass off: the user's setting, not ours


@pytest.mark.slow
def test_an_opt_out_value_other_than_0_or_1_warns_once_and_keeps_the_settings():
    bad = _probe(**{xla_flags.OPT_OUT: "maybe"})
    assert bad["status"] == "set" and bad["flags"] == ADDED
    assert len(bad["warnings"]) == 1
    assert "C4JAX_XLA_FLAGS must be 0 (XLA's own settings) or 1 (c4jax's, the default); got 'maybe'" in bad["warnings"][0]
    on = _probe(**{xla_flags.OPT_OUT: "1"})
    assert on["status"] == "set" and on["flags"] == ADDED and on["warnings"] == []


def test_the_users_llvm_option_is_kept_and_llvm_accepts_ours():
    """LLVM stops the process at an option it does not know: the probes'
    compiles (with c4jax's option, and with the user's) show it is LLVM's."""
    user = _probe(XLA_FLAGS="--xla_backend_extra_options=-disable-lsr=false")
    assert user["flags"].split()[0] == f"--xla_backend_extra_options=-disable-lsr=false,{THRESHOLD_KEY}={LOOP_BYTES}"
    assert user["small_loops"] == 2


def test_importing_after_jax_ran_warns_once_and_changes_nothing():
    late = _probe("late")
    assert late["status"] == "too late" and late["in_effect"] is None and late["flags"] == ""
    assert late["small_loops"] == 1
    assert len(late["warnings"]) == 1 and "Import c4jax before running JAX code" in late["warnings"][0]
    assert THRESHOLD_KEY in late["warnings"][0]


@pytest.mark.parametrize(
    "flags, devices, expected",
    [
        ("", 4, f"{DEVICES_KEY}=4"),
        ("--x=1", 2, f"--x=1 {DEVICES_KEY}=2"),
        ("", 1, ""),  # one device: nothing to add
        (f"{DEVICES_KEY}=3", 8, f"{DEVICES_KEY}=3"),  # the user's count wins
    ],
)
def test_flags_with_cpu_devices(flags, devices, expected):
    assert flags_with_cpu_devices(flags, devices) == expected


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_a_bad_device_count_is_a_value_error(bad):
    with pytest.raises(ValueError, match="devices must be an int >= 1"):
        flags_with_cpu_devices("", bad)


@pytest.mark.slow
def test_the_cpu_devices_follow_the_environment_variable_and_the_users_flags():
    assert _probe(**{DEVICES_ENV: "3"})["cpu_devices"] == 3
    assert _probe(**{DEVICES_ENV: "1"})["flags"] == EXTRA
    assert _probe(XLA_FLAGS=f"{DEVICES_KEY}=5", **{DEVICES_ENV: "3"})["cpu_devices"] == 5
    bad = _probe(**{DEVICES_ENV: "two"})
    assert bad["cpu_devices"] == 1 and bad["flags"] == EXTRA
    assert len(bad["warnings"]) == 1 and "C4JAX_CPU_DEVICES must be an int >= 1" in bad["warnings"][0]


_EMITTERS_OFF = {xla_flags.EMITTERS_KEY: False} if xla_flags._jaxlib_before(0, 11) else {}
_LIGHT = xla_flags.LIGHT_OPT_LEVEL


@pytest.mark.parametrize(
    "function, platform, flags, opt_out, expected",
    [
        ("compiler_options", "cpu", "", None, {xla_flags.OPT_LEVEL_KEY: xla_flags.CPU_OPT_LEVEL}),
        ("compiler_options", "cpu", "--xla_backend_optimization_level=0", None, {}),  # the user's level wins
        ("compiler_options", "cpu", "", "0", {}),  # C4JAX_XLA_FLAGS=0: XLA's default
        ("compiler_options", "gpu", "", None, {}),
        ("compiler_options", "tpu", "", None, {}),
        ("light_compiler_options", "cpu", "", None, {xla_flags.OPT_LEVEL_KEY: _LIGHT, **_EMITTERS_OFF}),
        ("light_compiler_options", "cpu", "--xla_backend_optimization_level=0", None, _EMITTERS_OFF),
        ("light_compiler_options", "cpu", "--xla_cpu_use_fusion_emitters=true", None,
         {xla_flags.OPT_LEVEL_KEY: _LIGHT}),
        ("light_compiler_options", "cpu", "", "0", {}),
        ("light_compiler_options", "gpu", "", None, {}),
    ],
)
def test_compiler_options(monkeypatch, function, platform, flags, opt_out, expected):
    monkeypatch.setenv("XLA_FLAGS", flags)
    if opt_out is None:
        monkeypatch.delenv(xla_flags.OPT_OUT, raising=False)
    else:
        monkeypatch.setenv(xla_flags.OPT_OUT, opt_out)
    assert getattr(xla_flags, function)(platform) == expected


def test_the_search_and_the_game_loops_compile_with_the_compiler_options(monkeypatch):
    """Every executable c4jax compiles for itself gets ``compiler_options``
    (recorded at ``Lowered.compile``), except the search's root and output
    stages, which get ``light_compiler_options``; the compiled searches are
    keyed on them: another level compiles the same search again."""
    import jax

    import c4jax
    from c4jax.games import tictactoe
    from c4jax.tools.players import random_player

    seen = []
    original = jax.stages.Lowered.compile

    def recording(self, compiler_options=None):
        seen.append(compiler_options)
        return original(self, compiler_options=compiler_options)

    def sort(options):  # the search's stages compile on two threads
        return sorted(options, key=repr)

    monkeypatch.setattr(jax.stages.Lowered, "compile", recording)
    # XLA_FLAGS is read once, when JAX starts: from here on only
    # compiler_options reads it.  Level 0 keeps the compiles short.
    monkeypatch.setenv("XLA_FLAGS", "")
    monkeypatch.delenv(xla_flags.OPT_OUT, raising=False)
    monkeypatch.setattr(xla_flags, "CPU_OPT_LEVEL", 0)
    level = {"cpu": 0}.get(jax.default_backend())
    expected = {} if level is None else {xla_flags.OPT_LEVEL_KEY: level}
    light = xla_flags.light_compiler_options(jax.default_backend())
    if level is not None:
        assert light[xla_flags.OPT_LEVEL_KEY] == xla_flags.LIGHT_OPT_LEVEL
    c4jax.clear_compiled()
    env = tictactoe.env_reset()
    c4jax.run_mcts(jax.random.key(0), env, 8)
    c4jax.run_mcts(jax.random.key(1), env, 8)
    assert sort(seen) == sort([expected, light, light])
    c4jax.arena(jax.random.key(0), random_player(), random_player(), 2, env)
    assert len(seen) == 5 and seen[3:] == [expected, expected]
    if level is not None:
        monkeypatch.setattr(xla_flags, "CPU_OPT_LEVEL", 1)
        c4jax.run_mcts(jax.random.key(2), env, 8)
        assert sort(seen[5:]) == sort([{xla_flags.OPT_LEVEL_KEY: 1}, light, light])
