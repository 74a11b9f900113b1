"""Reading XLA's optimized HLO text: which instructions run inside a loop.

Used by tests/test_search_cost.py to prove from the compiled program that the
loop over simulations holds no whole-tree ``copy``, ``select`` or
``concatenate``.  The text is ``jax.jit(f).lower(*args).compile().as_text()``.
"""

from __future__ import annotations

import dataclasses
import re

_HEADER = re.compile(r"^(?:ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")
_CALLED = re.compile(
    r"\b(?:calls|to_apply|body|condition|true_computation|false_computation)=%?([\w.\-]+)"
)
_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")
_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*)$")
_DIMS = re.compile(r"\[([\d,]*)\]")
# The named scope of the search's loop over simulations (c4jax.search.mcts).
SIMULATIONS_SCOPE = "simulations"


@dataclasses.dataclass(frozen=True)
class Instruction:
    computation: str
    name: str
    shape: str
    opcode: str
    text: str

    def dims(self) -> list[tuple[int, ...]]:
        """The dimensions of every array in the result shape."""
        return [tuple(int(d) for d in m.split(",") if d) for m in _DIMS.findall(self.shape)]


def _split_shape(rest: str) -> tuple[str, str]:
    """``'f32[3]{0} add(...)'`` -> ``('f32[3]{0}', 'add')``; tuple shapes too."""
    if rest.startswith("("):
        depth = 0
        for i, ch in enumerate(rest):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                shape, tail = rest[: i + 1], rest[i + 1 :].lstrip()
                break
        else:
            return rest, ""
    else:
        shape, _, tail = rest.partition(" ")
    opcode = tail.split("(", 1)[0].strip()
    return shape, opcode


def parse(text: str) -> dict[str, list[Instruction]]:
    """Computation name -> its instructions."""
    comps: dict[str, list[Instruction]] = {}
    current = None
    for line in text.splitlines():
        if not line.startswith((" ", "\t")):
            m = _HEADER.match(line)
            current = m.group(1) if m else None
            if current is not None:
                comps[current] = []
            continue
        if current is None:
            continue
        m = _INSTR.match(line)
        if not m:
            continue
        shape, opcode = _split_shape(m.group(2))
        comps[current].append(Instruction(current, m.group(1), shape, opcode, line.strip()))
    return comps


def called(instr: Instruction) -> list[str]:
    names = _CALLED.findall(instr.text)
    for group in _BRANCHES.findall(instr.text):
        names += [n.strip().lstrip("%") for n in group.split(",") if n.strip()]
    return names


def reachable(comps: dict[str, list[Instruction]], roots: list[str]) -> set[str]:
    """Every computation called, directly or not, from ``roots``."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        c = todo.pop()
        if c in seen or c not in comps:
            continue
        seen.add(c)
        for instr in comps[c]:
            todo += called(instr)
    return seen


def in_scope(instr: Instruction, scope: str) -> bool:
    """Whether ``instr`` is the op of ``jax.named_scope(scope)`` itself (its
    op_name ends in ``scope/<op>``; ``vmap`` writes ``vmap(scope)/<op>``)."""
    return re.search(rf'[/(]{re.escape(scope)}\)?/{re.escape(instr.opcode)}"', instr.text) is not None


def loops_carrying(comps: dict[str, list[Instruction]], size: int, scope: str | None = None) -> list[Instruction]:
    """The outermost ``while`` instructions whose state holds an array with a
    dimension ``size`` (e.g. the node capacity); with ``scope``, only the
    loops named so (``jax.named_scope``)."""
    whiles = [i for c in comps.values() for i in c if i.opcode == "while"]
    with_size = [w for w in whiles if any(size in d for d in w.dims())]
    inner: set[str] = set()
    for w in with_size:
        body = reachable(comps, called(w))
        inner |= {i.name for c in body for i in comps[c] if i.opcode == "while"}
    outer = [w for w in with_size if w.name not in inner]
    return outer if scope is None else [w for w in outer if in_scope(w, scope)]


def whole_array_ops(
    text: str, size: int, opcodes=("copy", "select", "concatenate")
) -> tuple[list[Instruction], list[Instruction]]:
    """``(loops, ops)``: the outermost loops whose state holds a ``size``-long
    axis, and the instructions with one of ``opcodes`` whose result has that
    axis, anywhere inside those loops (nested loops and fusions included)."""
    comps = parse(text)
    loops = loops_carrying(comps, size, SIMULATIONS_SCOPE)
    inside = reachable(comps, [name for w in loops for name in called(w)])
    ops = [
        i
        for c in sorted(inside)
        for i in comps[c]
        if i.opcode in opcodes and any(size in d for d in i.dims())
    ]
    return loops, ops


def _in_small_calls(comps: dict[str, list[Instruction]]) -> set[str]:
    """The computations inside calls that XLA's CPU compiler turned into a
    single kernel (``xla_cpu_small_call``), nested ones included."""
    small = {
        name
        for c in comps.values()
        for i in c
        if i.opcode == "call" and 'xla_cpu_small_call="true"' in i.text
        for name in called(i)
    }
    return reachable(comps, sorted(small))


def launched_loops(text: str, size: int) -> tuple[list[Instruction], list[Instruction]]:
    """``(hoisted, launched)``: the loops nested in the outermost loops that
    carry a ``size``-long axis (the loop over simulations), whose own state
    holds such an axis too (loops that read the tree: the descent, the
    solver's proofs), split into those XLA's CPU compiler turned into a
    single kernel (a ``call`` marked ``xla_cpu_small_call``) and those whose
    every iteration launches its kernels one by one."""
    comps = parse(text)
    outer = loops_carrying(comps, size, SIMULATIONS_SCOPE)
    inside = reachable(comps, [name for w in outer for name in called(w)])
    hoisted_inside = _in_small_calls(comps)
    nested = [
        i for c in sorted(inside) for i in comps[c]
        if i.opcode == "while" and any(size in d for d in i.dims())
    ]
    hoisted = [w for w in nested if w.computation in hoisted_inside]
    return hoisted, [w for w in nested if w.computation not in hoisted_inside]


def gathers_from(text: str, size: int) -> list[Instruction]:
    """The ``gather`` instructions inside the loops nested in the loop over
    simulations (see :func:`launched_loops`: the descent, the solver's
    proofs), nested loops and fusions included, whose operand has a
    ``size``-long axis (a tree array)."""
    comps = parse(text)
    outer = loops_carrying(comps, size, SIMULATIONS_SCOPE)
    inside = reachable(comps, [name for w in outer for name in called(w)])
    nested = [
        i for c in sorted(inside) for i in comps[c]
        if i.opcode == "while" and any(size in d for d in i.dims())
    ]
    within = reachable(comps, [name for w in nested for name in called(w)])
    found = []
    for c in sorted(within):
        shapes = {i.name: i for i in comps[c]}
        for i in comps[c]:
            if i.opcode != "gather":
                continue
            operand = re.search(r"gather\(%?([\w.\-]+)", i.text)
            source = shapes.get(operand.group(1)) if operand else None
            if source is not None and any(size in d for d in source.dims()):
                found.append(i)
    return found


def simulation_loop_is_one_kernel(text: str, size: int) -> bool:
    """Whether every loop over simulations (named so, carrying a
    ``size``-long axis; one per game when a batch is searched game by game)
    sits in a call that XLA's CPU compiler turned into
    a single kernel (``xla_cpu_small_call``)."""
    comps = parse(text)
    loops = [i for c in comps.values() for i in c
             if i.opcode == "while" and in_scope(i, SIMULATIONS_SCOPE) and any(size in d for d in i.dims())]
    hoisted = _in_small_calls(comps)
    return bool(loops) and all(w.computation in hoisted for w in loops)
