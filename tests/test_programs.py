"""Traced searches kept on disk (c4jax.runtime.compiled): a search of the same
shapes and options in a later process loads its program without tracing,
and gives the same output; damaged entries are traced again; searches with
the user's own functions are not kept."""

import pickle

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import c4jax
from c4jax.games import connect4 as c4
from c4jax.games import tictactoe as ttt
from c4jax.runtime import compiled


@pytest.fixture
def folder(tmp_path):
    """A persistent cache folder of this test's own; the session's restored after."""
    before = jax.config.jax_compilation_cache_dir
    jax.config.update("jax_compilation_cache_dir", str(tmp_path))
    c4jax.clear_compiled()
    try:
        yield tmp_path / compiled.SUBFOLDER
    finally:
        jax.config.update("jax_compilation_cache_dir", before)
        c4jax.clear_compiled()


def _search(**options):
    out = c4jax.run_mcts(jax.random.key(3), ttt.from_moves("15"), 64, **options)
    return jax.tree.map(lambda x: np.asarray(jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key)
                                             else x), out)


def _same(a, b):
    chex.assert_trees_all_equal(a, b)


def _no_tracing(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("traced although a kept program was there")

    monkeypatch.setattr(compiled.export, "export", refuse)


STAGES = 3  # a search is three programs: root, simulations, output


def test_a_kept_program_is_loaded_without_tracing_and_a_wrong_or_damaged_entry_is_traced_again(folder, monkeypatch):
    """Two searches' kept programs (other options are other programs) give
    the same outputs loaded without tracing.  Entries moved under each
    other's names (a valid program of another key) are not used: each search
    traces again, gives its own output and rewrites its entries; so are
    damaged entries."""
    first, other = _search(), _search(selection="uct")
    entries = sorted(folder.glob("*.exported"))
    assert len(entries) == 2 * STAGES
    c4jax.clear_compiled()
    with monkeypatch.context() as patched:
        _no_tracing(patched)
        _same(_search(), first)
        _same(_search(selection="uct"), other)
    blobs = [e.read_bytes() for e in entries]
    for entry, blob in zip(entries, blobs[1:] + blobs[:1]):
        entry.write_bytes(blob)
    c4jax.clear_compiled()
    _same(_search(), first)
    _same(_search(selection="uct"), other)
    for entry in entries:  # each rewritten for its own key
        assert pickle.loads(entry.read_bytes())[0] == entry.stem
    for entry in entries:
        entry.write_bytes(b"not a program")
    c4jax.clear_compiled()
    _same(_search(), first)
    rewritten = [entry for entry in entries if entry.read_bytes() != b"not a program"]  # the search's own
    assert len(rewritten) == STAGES and all(pickle.loads(e.read_bytes())[0] == e.stem for e in rewritten)


@pytest.mark.slow
def test_own_functions_are_not_kept(folder):
    # Other options are other programs, each kept: the test above.
    assert compiled.directory() is not None  # this folder keeps the searches of c4jax's own functions
    _search(prior_fn=lambda env: jnp.zeros(env.game.num_actions))
    assert not list(folder.glob("*.exported"))


def test_nothing_is_kept_while_the_compilation_cache_is_off(tmp_path):
    before = jax.config.jax_compilation_cache_dir
    jax.config.update("jax_compilation_cache_dir", None)
    try:
        assert compiled.directory() is None
        _search()
    finally:
        jax.config.update("jax_compilation_cache_dir", before)
    assert not list(tmp_path.rglob("*.exported"))


def test_a_game_of_your_own_is_kept_by_the_source_of_its_class(tmp_path, monkeypatch):
    import importlib
    import sys

    assert compiled.game_digest(type(c4.make())) == "c4jax"
    module = tmp_path / "my_game_rules.py"
    module.write_text("class MyGame:\n    rows = 3\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    first = compiled.game_digest(importlib.import_module("my_game_rules").MyGame)
    module.write_text("class MyGame:\n    rows = 4\n")
    del sys.modules["my_game_rules"]
    second = compiled.game_digest(importlib.import_module("my_game_rules").MyGame)
    assert None not in (first, second) and first != second
    assert compiled.game_digest(type("Typed", (), {"__module__": "typed_in_a_notebook"})) is None  # no file
