"""``c4jax analyze``'s outputs, run in this process through
``c4jax.cli.main``: the plot (its title inside the figure, the best move
first) and the plot and tree files written beside JSON or DOT on stdout."""

from __future__ import annotations

import json

import numpy as np
import pytest

import c4jax
from c4jax.cli import main


@pytest.mark.parametrize("rows, cols, moves", [(6, 7, "4444"), (40, 7, "4" * 40 + "3" * 40 + "5" * 40),
                                               (8, 64, ",".join(str(1 + i % 64) for i in range(120)))])
def test_the_plot_title_fits_its_figure_and_names_the_best_move(rows, cols, moves):
    import jax

    from c4jax import connect4
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

