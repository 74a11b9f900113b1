"""c4jax.runtime.cache: JAX's persistent compilation cache in a per-user folder, and
the folder the command chooses."""

import pathlib

import jax
import pytest

import c4jax


def test_the_library_switches_the_compilation_cache_on_in_a_folder_of_its_own(tmp_path, monkeypatch):
    from c4jax.runtime import cache

    monkeypatch.setenv("C4JAX_CACHE_DIR", str(tmp_path / "c"))
    assert cache.default_cache_dir() == tmp_path / "c"
    monkeypatch.setenv("C4JAX_CACHE_DIR", "")
    assert cache.default_cache_dir() is None and c4jax.enable_compilation_cache() is None
    monkeypatch.delenv("C4JAX_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")  # ignored: not absolute
    assert cache.default_cache_dir() == pathlib.Path.home() / ".cache" / "c4jax" / "jax"
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(OSError):
        c4jax.enable_compilation_cache(blocked / "sub")
    before = jax.config.jax_compilation_cache_dir
    try:
        assert c4jax.enable_compilation_cache(tmp_path / "d") == tmp_path / "d"
        assert jax.config.jax_compilation_cache_dir == str(tmp_path / "d")
    finally:
        jax.config.update("jax_compilation_cache_dir", before)


def test_the_command_ignores_a_relative_xdg_cache_home(monkeypatch):
    # The XDG base-directory rule: a relative XDG_CACHE_HOME is invalid and
    # ignored, so the folder is ~/.cache/c4jax/jax; an absolute one is used.
    from types import SimpleNamespace

    from c4jax.cli import from_args

    args = SimpleNamespace(no_cache=False, cache_dir=None)
    monkeypatch.delenv("C4JAX_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", "/home/someone")
    monkeypatch.setenv("XDG_CACHE_HOME", "relcache")
    assert str(from_args.cache_dir(args)) == "/home/someone/.cache/c4jax/jax"
    monkeypatch.setenv("XDG_CACHE_HOME", "/var/cache/me")
    assert str(from_args.cache_dir(args)) == "/var/cache/me/c4jax/jax"
