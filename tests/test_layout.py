"""The package's layout: no import circle among fwcore's modules."""
import ast
from pathlib import Path

import fwcore

PACKAGE = Path(fwcore.__file__).parent


def import_graph():
    """Module name -> the fwcore modules it imports, at module level or inside a function
    (``from . import x`` of a compiled kernel is no edge: kernels import no module)."""
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ("fwcore",) + path.relative_to(PACKAGE).with_suffix("").parts
        package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if package else parts)] = (path, package)
    graph = {}
    for name, (path, package) in modules.items():
        here = name.split(".") if package else name.split(".")[:-1]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = ((here[:len(here) - node.level + 1] if node.level else []) +
                        ([node.module] if node.module else []))
                target = ".".join(base)
                for alias in node.names:
                    if f"{target}.{alias.name}" in modules:
                        deps.add(f"{target}.{alias.name}")
                    elif node.module:
                        deps.add(target)
            elif isinstance(node, ast.Import):
                deps.update(alias.name for alias in node.names)
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def cycles(graph):
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle():
    graph = import_graph()
    assert {"fwcore.auto", "fwcore.exact", "fwcore.oracles.base"} <= set(graph)
    assert "fwcore.elimination" in graph["fwcore.auto"]  # the graph sees the imports
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
