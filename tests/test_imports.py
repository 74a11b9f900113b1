"""What ``import c4jax`` and the ``c4jax`` command load: the public API on
first use, the library never the CLI, and the command's help and usage errors
without JAX (each checked in a fresh interpreter)."""

import json
import subprocess
import sys

import c4jax

_PROBE = r"""
import contextlib, io, json, sys
what = sys.argv[1]
if what == "import":
    import c4jax
elif what == "api":
    import c4jax
    for name in c4jax.__all__:
        getattr(c4jax, name)
else:
    from c4jax.cli import main
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = main(json.loads(what))
print(json.dumps(sorted(m for m in sys.modules if m == "jax" or m.startswith(("c4jax", "mctx", "rich", "numpy")))))
"""


def _loaded(what: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", _PROBE, what], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_import_c4jax_loads_neither_jax_nor_the_search_nor_the_cli():
    # c4jax.validation: the flags' checks (plain Python, no imports of its own)
    assert _loaded("import") == {"c4jax", "c4jax.runtime", "c4jax.runtime.xla_flags", "c4jax.validation"}


def test_the_whole_public_api_loads_without_the_cli():
    loaded = _loaded("api")
    assert {"jax", "mctx", "c4jax.search", "c4jax.tools.matches", "c4jax.tools.self_play"} <= loaded
    assert not any(m.startswith("c4jax.cli") for m in loaded), sorted(loaded)


def test_help_and_usage_errors_import_no_jax():
    for argv in (["--help"], ["analyze", "--help"], ["play", "--help"], ["arena"], ["selfplay", "--games", "x"],
                 ["--version"], []):
        loaded = _loaded(json.dumps(argv))
        assert "jax" not in loaded and "c4jax.search" not in loaded, (argv, sorted(loaded))


def test_every_public_name_is_listed_and_resolves():
    assert set(c4jax.__all__) <= set(dir(c4jax))
    for name in c4jax.__all__:
        assert getattr(c4jax, name) is not None


def test_the_public_surface_is_functions_and_types_only():
    """At most 30 names, no module among them, and the package a plain
    module (no class swap): importing every module leaves c4jax.arena and
    c4jax.selfplay the functions."""
    import importlib
    import types

    assert len(c4jax.__all__) <= 30 and len(set(c4jax.__all__)) == len(c4jax.__all__)
    assert not [n for n in c4jax.__all__ if isinstance(getattr(c4jax, n), types.ModuleType)]
    assert type(c4jax) is types.ModuleType
    importlib.import_module("c4jax.tools.matches")
    importlib.import_module("c4jax.tools.self_play")
    assert callable(c4jax.arena) and c4jax.arena.__module__ == "c4jax.tools.matches"
    assert callable(c4jax.selfplay) and c4jax.selfplay.__module__ == "c4jax.tools.self_play"


_EACH_MODULE = r"""
import pathlib, sys, importlib, c4jax
root = pathlib.Path(c4jax.__file__).parent
names = sorted("c4jax." + ".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
               for p in root.rglob("*.py") if p.name != "__main__.py")
failed = []
for name in names:
    for loaded in [m for m in sys.modules if m.startswith("c4jax.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except ImportError as e:
        failed.append(f"{name}: {e}")
print(len(names), failed)
"""


def test_every_module_imports_first_without_an_import_cycle():
    """Each module of the package imported first (the others unloaded):
    an import cycle shows as an ImportError of a partially initialised module."""
    out = subprocess.run([sys.executable, "-c", _EACH_MODULE], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    count, failed = out.stdout.strip().splitlines()[-1].split(" ", 1)
    assert int(count) >= 40 and failed == "[]", out.stdout
