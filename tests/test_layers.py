"""The house's layers: every import of the package, at module level or
inside a function, points down the layers, and rich and matplotlib are
imported only where things are shown (read from the source with ``ast``)."""

import ast
import pathlib

import c4jax

ROOT = pathlib.Path(c4jax.__file__).parent

# Lowest first; a module may import its own layer and those below.
LAYERS = [
    ("foundation", ("c4jax.validation", "c4jax.files", "c4jax.keys")),
    ("runtime", ("c4jax.runtime",)),
    ("games", ("c4jax.games",)),
    ("search", ("c4jax.search",)),
    ("present", ("c4jax.present",)),
    ("tools", ("c4jax.tools",)),
    ("training", ("c4jax.training",)),
    ("api", ("c4jax.__init__",)),
    ("cli", ("c4jax.cli", "c4jax.__main__")),
]
SHOWING = ("present", "cli")


def _module(path: pathlib.Path) -> str:
    return "c4jax." + ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _layer(module: str) -> int:
    for i, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return i
    raise AssertionError(f"{module} is on no layer")


def _imports(path: pathlib.Path):
    """``(line, module)`` for every import in the file, at any depth."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
            if node.module in ("c4jax", "c4jax.runtime", "c4jax.games", "c4jax.search", "c4jax.tools",
                               "c4jax.present", "c4jax.training"):
                for alias in node.names:  # from c4jax.search import programs
                    if (ROOT / pathlib.Path(*(node.module.split(".")[1:] + [alias.name + ".py"]))).exists():
                        yield node.lineno, f"{node.module}.{alias.name}"


def _sources():
    files = sorted(ROOT.rglob("*.py"))
    assert len(files) >= 40
    return files


def test_every_import_points_down_the_layers():
    up = []
    for path in _sources():
        here = _module(path)
        for line, name in _imports(path):
            if name.split(".")[0] != "c4jax" or name == "c4jax":
                continue
            if _layer(name) > _layer(here):
                up.append(f"{path.relative_to(ROOT)}:{line}: {here} ({LAYERS[_layer(here)][0]}) imports "
                          f"{name} ({LAYERS[_layer(name)][0]})")
    assert not up, "\n".join(up)


def test_the_package_imports_itself_only_through_the_package():
    """``from c4jax import X`` inside the package would load the public API
    (and hide which module a name comes from); the CLI takes its version."""
    found = [f"{path.relative_to(ROOT)}:{line}" for path in _sources() for line, name in _imports(path)
             if name == "c4jax" and _module(path) not in ("c4jax.cli.__init__",)]
    assert not found, found


def test_rich_and_matplotlib_are_imported_only_where_things_are_shown():
    found = []
    for path in _sources():
        here = _module(path)
        for line, name in _imports(path):
            if name.split(".")[0] in ("rich", "matplotlib") and LAYERS[_layer(here)][0] not in SHOWING:
                found.append(f"{path.relative_to(ROOT)}:{line}: {name}")
    assert not found, found


def test_the_layers_catch_an_import_that_points_up(tmp_path):
    """The check itself: a games module importing the search is reported."""
    assert _layer("c4jax.search.run") > _layer("c4jax.games.connect4")
    assert _layer("c4jax.tools.matches") > _layer("c4jax.present.boards") > _layer("c4jax.search.mcts")
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from c4jax.search.run import run_mcts\n")
    assert list(_imports(bad)) == [(2, "c4jax.search.run")]
