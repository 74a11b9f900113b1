"""Analysis you can export: ``c4jax.tree_to_dot``, ``c4jax.present.analysis.move_stats`` and
``c4jax.present.analysis.search_table`` here; ``c4jax analyze --json`` and ``--dot`` end to
end in ``test_cli.py``."""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest

import c4jax
from c4jax.present.analysis import move_stats, search_table
from c4jax.games import connect4 as c4
from c4jax.games import tictactoe as ttt

NODE = re.compile(r"^  n(\d+) \[label=\"(.*)\"\];$", re.M)
EDGE = re.compile(r"^  n(\d+) -> n(\d+) \[label=\"move (\d+)\\nQ ([-+0-9.]+)\\nprior ([0-9.]+)", re.M)


@pytest.fixture(scope="module")
def search():
    return c4jax.run_mcts(jax.random.key(0), c4.from_moves("4453"), 50)


def test_one_dot_node_per_visited_node_and_edges_from_the_tree(search):
    tree = jax.device_get(search.search_tree)
    dot = c4jax.tree_to_dot(search.search_tree)
    assert dot.startswith("digraph search_tree {") and dot.rstrip().endswith("}")
    nodes = [int(m.group(1)) for m in NODE.finditer(dot)]
    visited = np.flatnonzero(tree.node_visits[0] > 0)
    assert sorted(nodes) == visited.tolist()  # one node per visited node, each once
    edges = EDGE.findall(dot)
    assert len(edges) == len(nodes) - 1  # a tree
    for parent, child, move, q, prior in edges:
        parent, child, a = int(parent), int(child), int(move) - 1
        assert tree.children_index[0, parent, a] == child
        expect = tree.children_rewards[0, parent, a] + tree.children_discounts[0, parent, a] * tree.children_values[0, parent, a]
        assert float(q) == pytest.approx(float(expect), abs=6e-4)
    root = NODE.search(dot).group(2)
    assert f"visits {int(tree.node_visits[0, 0]):,}" in root and root.startswith("root")


def test_depth_and_visit_filters(search):
    tree = jax.device_get(search.search_tree)
    one = c4jax.tree_to_dot(search.search_tree, max_depth=1)
    children = int(np.sum(tree.children_visits[0, 0] > 0))
    assert len(NODE.findall(one)) == 1 + children
    assert len(NODE.findall(c4jax.tree_to_dot(search.search_tree, max_depth=0))) == 1
    busy = c4jax.tree_to_dot(search.search_tree, min_visits=5)
    shown = [int(n) for n, _ in NODE.findall(busy)]
    assert all(tree.node_visits[0, n] >= 5 for n in shown[1:]) and len(shown) < int(np.sum(tree.node_visits[0] > 0))


def test_move_stats_and_search_table_of_one_search(search):
    """The public per-move statistics equal the SearchOutput's, and the table
    shows one row per legal move (what ``c4jax analyze`` and the quickstart
    print)."""
    from rich.console import Console

    env = c4.from_moves("4453")
    stats = move_stats(search, env)
    assert [m["move"] for m in stats] == [1, 2, 3, 4, 5, 6, 7]
    assert [m["visits"] for m in stats] == np.asarray(search.visit_counts).tolist()
    assert sum(m["share"] for m in stats) == pytest.approx(1.0)
    assert sum(m["prior"] for m in stats) == pytest.approx(1.0, abs=1e-5)
    best = [m["move"] for m in stats if m["best"]]
    assert best == [int(search.action) + 1]
    for m in stats:
        assert m["pv"][0] == m["move"]
        if m["visits"]:
            assert m["q"] == pytest.approx(float(search.qvalues[m["move"] - 1]))
    con = Console(width=120, record=True, file=open("/dev/null", "w"))
    con.print(search_table(search, env, with_prior=True))
    text = con.export_text()
    assert "X to move" in text and "<- best" in text
    rows = [ln for ln in text.splitlines() if re.match(r"^\W*\d+ \W+\d+ ", ln)]
    assert len(rows) == 7, text
    # The same from a batch of one (env and output batched).
    batched = c4jax.run_mcts(jax.random.key(0), jax.tree.map(lambda x: x[None], env), 50)
    assert [m["move"] for m in move_stats(batched, jax.tree.map(lambda x: x[None], env))] == [1, 2, 3, 4, 5, 6, 7]


def test_move_stats_refuses_more_than_one_game(search):
    two = jax.tree.map(lambda *x: np.stack(x), c4.from_moves("4"), c4.from_moves("44"))
    with pytest.raises(ValueError, match="one game only"):
        move_stats(search, two)
    with pytest.raises(ValueError, match="Env"):
        search_table(search, "4453")
    # Another game, or another board of the same game: named, not a numpy error.
    with pytest.raises(ValueError, match=r"not the position this search was run on .*TicTacToe\(\)"):
        move_stats(search, ttt.from_moves("5"))
    with pytest.raises(ValueError, match="another board"):
        move_stats(search, c4.from_moves("44"))


def test_proven_nodes_say_so():
    out = c4jax.run_mcts(jax.random.key(1), ttt.from_moves("1425"), 40)  # X wins at 3
    dot = c4jax.tree_to_dot(out.search_tree)
    assert "proven win" in NODE.search(dot).group(2)  # the root: X to move wins


def test_a_finished_node_is_game_over_in_dot_and_numpy_ints_are_ints():
    # X has won: the root is labelled "game over", not a draw; the filters
    # take NumPy integers as the ints they hold.
    out = c4jax.run_mcts(jax.random.key(0), ttt.from_moves("14253"), 8)  # X has won
    dot = c4jax.tree_to_dot(out.search_tree, max_depth=np.int64(2), min_visits=np.int32(0))
    root = dot.splitlines()[3]
    assert "game over" in root and "draw" not in root


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(batch_index=1), r"batch_index must be an int in 0\.\.0"),
        (dict(max_depth=-1), "max_depth must be None or an int >= 0"),
        (dict(min_visits=1.5), "min_visits must be an int >= 0"),
    ],
)
def test_bad_arguments(search, kwargs, match):
    with pytest.raises(ValueError, match=match):
        c4jax.tree_to_dot(search.search_tree, **kwargs)
    with pytest.raises(ValueError, match="tree must be an mctx.Tree"):
        c4jax.tree_to_dot(search)


def test_dot_writes_values_as_the_table_does():
    """The root's label gives the value the search returns (exactly +1 once
    proven, not the mean) and what was proven, in the words of the table; a
    proven edge's Q is exactly +1 / -1, every other one the mean; nothing is
    written -0.000."""
    from c4jax.present.analysis import fmt_q, root_value_text, shown_q

    # X wins in 3 by cell 7.  Four lanes prove the root late enough that
    # its mean stays below +1 (one lane proves it before any rollout fails).
    out = c4jax.run_mcts(jax.random.key(1), ttt.from_moves("1593"), 40, lanes=4)
    tree = jax.device_get(out.search_tree)
    assert float(tree.node_values[0, 0]) < 1.0 == float(out.value)  # the mean is below the proven +1
    dot = c4jax.tree_to_dot(out.search_tree)
    root = NODE.search(dot).group(2).split("\\n")  # root, visits, value, what was proven
    assert f"{root[2]} ({root[3]})" == root_value_text(out) == "value +1.000 (proven win in 3)", root
    lower, upper = tree.extra_data.value_lower[0], tree.extra_data.value_upper[0]
    rounded = 0
    for parent, child, move, q in (e[:4] for e in EDGE.findall(dot)):
        parent, child, a = int(parent), int(child), int(move) - 1
        r, d = tree.children_rewards[0, parent, a], tree.children_discounts[0, parent, a]
        mean = float(r + d * tree.children_values[0, parent, a])
        bounds = sorted((float(r + d * lower[child]), float(r + d * upper[child])))
        assert q == fmt_q(shown_q(mean, *bounds)), (parent, move, q, mean, bounds)
        rounded += abs(mean) < 0.9995 and abs(float(q)) == 1.0
    assert rounded, dot  # some proven edge's mean is not +-1: the rule was needed

    # Means a hair from zero on either side are +0.000, at nodes and edges.
    tiny = out.search_tree.replace(node_values=out.search_tree.node_values * 0 - 1e-9,
                                   children_values=out.search_tree.children_values * 0 + 1e-9)
    dot = c4jax.tree_to_dot(tiny)
    assert "-0.000" not in dot and "value +0.000" in dot and "Q +0.000" in dot


def test_the_principal_variation_is_written_as_analyze_takes_moves():
    """Digits joined on boards of up to 9 columns, numbers separated by
    commas on wider ones: the line can be pasted after the position's moves."""
    from rich.console import Console

    from c4jax.present.analysis import moves_text

    assert moves_text(c4.make(6, 7), [3, 3, 4, 2]) == "4453"
    assert moves_text(c4.make(8, 12), [9, 11, 2]) == "10,12,3"
    assert moves_text(ttt.env_reset().game, []) == ""
    for game, moves in ((c4.make(6, 7), "4453"), (c4.make(6, 12), [10, 12, 3])):
        env = game.from_moves(moves)
        out = c4jax.run_mcts(jax.random.key(0), env, 64)
        con = Console(width=200, record=True, file=open("/dev/null", "w"))
        con.print(search_table(out, env))
        text = con.export_text()
        pvs = {m["move"]: m["pv"] for m in move_stats(out, env)}
        rows = [[c.strip() for c in ln.split("│")[1:-1]]
                for ln in text.splitlines() if re.match(r"^│\s+\d+ │", ln)]
        assert len(rows) == len(pvs) and any(len(pv) > 2 for pv in pvs.values()), text
        for cells in rows:
            assert cells[5] == moves_text(game, [m - 1 for m in pvs[int(cells[0])]]), text
            assert " " not in cells[5], text
