"""``c4jax analyze``'s outputs, run in this process through
``c4jax.cli.main``: the plot (its title inside the figure, the best move
first) and the plot and tree files written beside JSON or DOT on stdout."""

from __future__ import annotations

import json

import numpy as np
import pytest

import c4jax
from c4jax.cli import main


@pytest.mark.slow
@pytest.mark.parametrize("rows, cols, moves", [(6, 7, "4444"), (40, 7, "4" * 40 + "3" * 40 + "5" * 40),
                                               (8, 64, ",".join(str(1 + i % 64) for i in range(120)))])
def test_the_plot_title_fits_its_figure_and_names_the_best_move(rows, cols, moves):
    import jax

    from c4jax.games import connect4
    from c4jax.cli.analyze import visits_figure
    from c4jax.cli.from_args import parse_moves

    game = connect4.make(rows, cols)
    env = parse_moves(game, moves)
    out = c4jax.run_mcts(jax.random.key(0), env, 16)
    legal = np.asarray(out.search_tree.root_invalid_actions)[0] == 0
    fig = visits_figure(game, out, legal, moves)
    fig.canvas.draw()
    import matplotlib.text

    (title,) = [t for t in fig.findobj(matplotlib.text.Text) if t.get_text() == fig.get_suptitle()]
    box = title.get_window_extent()
    assert 0 <= box.x0 and box.x1 <= fig.bbox.width and 0 <= box.y0 and box.y1 <= fig.bbox.height, (box, fig.bbox)
    first = fig.get_suptitle().splitlines()[0]
    assert first.startswith(f"best column: {int(out.action) + 1} (Q ")


def test_plot_and_dot_outputs_combine_with_json_and_dot_on_stdout(tmp_path, capsys):
    plot, dot = tmp_path / "v.svg", tmp_path / "t.dot"
    assert main(["analyze", "44", "-n", "50", "--json", "--plot", str(plot), "--dot", str(dot), "--depth", "1"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["moves"] == [4, 4]
    assert plot.read_text().lstrip().startswith("<?xml") and "digraph" in dot.read_text()
    assert main(["analyze", "44", "-n", "50", "--dot", "-", "--plot", str(tmp_path / "v.png")]) == 0
    assert capsys.readouterr().out.startswith("digraph") and (tmp_path / "v.png").read_bytes()[:4] == b"\x89PNG"



def test_the_title_writes_the_root_value_as_the_table_does(monkeypatch, capsys):
    """The value in the table's title is never -0.000 and says what the
    solver proved about the root, as ``c4jax play``'s titles do."""
    import c4jax.search

    main(["analyze", "1593", "--game", "tictactoe", "-n", "40", "--seed", "1"])  # X wins in 3 by cell 7
    out = capsys.readouterr().out
    assert "X to move, value +1.000 (proven win in 3)" in out, out

    search = c4jax.search.run_mcts
    # A root mean a hair below zero (the last draws of a search can leave one).
    monkeypatch.setattr(c4jax.search, "run_mcts", lambda *a, **k: search(*a, **k).replace(value=np.float32(-1e-9)))
    main(["analyze", "", "--game", "tictactoe", "-n", "8"])
    out = capsys.readouterr().out
    assert "X to move, value +0.000" in out and "-0.000" not in out, out


@pytest.mark.parametrize("budget", [["-n", "300"], ["--think", "0.2"]])
def test_the_search_compiles_before_the_status_says_searching(monkeypatch, budget):
    """A first search too small to matter compiles the programs (the status
    line says "compiling" meanwhile); the search itself, which the status
    line calls "searching", compiles nothing."""
    import c4jax.search
    from c4jax.runtime import compiled

    compiles = []
    for name in ("run_mcts", "run_mcts_anytime"):
        def counted(*args, _search=getattr(c4jax.search, name), **kwargs):
            before = compiled.stats()["compiles"]
            try:
                return _search(*args, **kwargs)
            finally:
                compiles.append(compiled.stats()["compiles"] - before)

        monkeypatch.setattr(c4jax.search, name, counted)
    compiled.clear()  # nothing kept from the tests before
    assert main(["analyze", "4453", *budget]) == 0
    assert len(compiles) == 2 and compiles[0] >= 1 and compiles[1] == 0, compiles


@pytest.mark.parametrize("q, lower, upper, plies, head", [
    (-1e-9, -1.0, 1.0, 0, "best cell: 5 (Q +0.000)"),
    (0.9, 1.0, 1.0, 3, "best cell: 5 (Q +1.000, proven win in 3)"),
    (-0.95, -1.0, -1.0, 4, "best cell: 5 (Q -1.000, proven loss in 4)"),
    (0.25, 0.0, 1.0, 0, "best cell: 5 (Q +0.250, proven >= draw)"),
])
def test_the_plot_title_writes_the_best_moves_q_as_the_table_does(q, lower, upper, plies, head):
    """Exactly +1 / -1 where the solver proved the move won / lost, what it
    proved, and no -0.000: the table's row of that move."""
    from types import SimpleNamespace

    import matplotlib.pyplot as plt

    from c4jax.games import tictactoe
    from c4jax.cli.analyze import visits_figure

    def per_move(x, dtype=np.float32):
        return np.asarray([x if a == 4 else 0 for a in range(9)], dtype)

    out = SimpleNamespace(action=np.int32(4), visit_counts=per_move(30, np.int32), qvalues=per_move(q),
                          qvalue_lower=per_move(lower), qvalue_upper=per_move(upper),
                          proven_plies=per_move(plies, np.int32))
    fig = visits_figure(tictactoe.env_reset().game, out, np.ones(9, bool), "")
    try:
        assert fig.get_suptitle().splitlines()[0] == head, fig.get_suptitle()
    finally:
        plt.close(fig)
