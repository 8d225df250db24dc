"""The `explore` package's shape (kbqa/translators/explore/__init__.py says it): one stage per sub-package, imports
that point one way down the stages, no import cycle between its modules, and no module importing another's
private names. Read from the source with `ast`, every import counted (those inside functions too)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "kbqa" / "translators" / "explore"
PREFIX = "kbqa.translators.explore"
# top to bottom: a layer may import the layers below it, never one above
LAYERS = ["translator", "fallback", "rank", "features", "lower", "propose", "link", "context|query|probes"]


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join([PREFIX, *parts]) if parts else PREFIX


def imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, imported names) for every import of a module of this package in `path`."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
            out.append((node.module, [a.name for a in node.names]))
            # `from kbqa.translators.explore import probes`: an import of that module
            out += [(f"{node.module}.{a.name}", []) for a in node.names
                    if (PACKAGE / Path(*f"{node.module}.{a.name}"[len(PREFIX) + 1:].split("."))).with_suffix(".py").is_file()]
        elif isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names if a.name.startswith(PREFIX)]
    return out


def graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (the package's own __init__ re-exports are left out)."""
    modules = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for m, path in modules.items():
        if m == PREFIX:
            continue
        for target, _names in imports(path):
            if target in modules and target != PREFIX:
                edges[m].add(target)
    return edges


def layer(module: str) -> int:
    first = module[len(PREFIX) + 1:].split(".")[0] if module != PREFIX else ""
    for i, names in enumerate(LAYERS):
        if first in names.split("|"):
            return i
    raise AssertionError(f"{module} is in no layer of {LAYERS}")


def test_there_is_no_import_cycle_inside_the_package() -> None:
    edges = graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for n in sorted(edges[m]):
            if state.get(n) == 1:
                cycle = path[path.index(n):] + [n]
                raise AssertionError("import cycle: " + " -> ".join(c[len(PREFIX) + 1:] for c in cycle))
            if n not in state:
                visit(n)
        path.pop()
        state[m] = 2

    for m in sorted(edges):
        if m not in state:
            visit(m)
    assert len(edges) > 20  # the walk saw the package


def test_imports_point_down_the_stages() -> None:
    upward = [f"{m[len(PREFIX) + 1:]} imports {n[len(PREFIX) + 1:]}" for m, targets in graph().items()
              if m != PREFIX for n in targets if layer(n) < layer(m)]
    assert not upward, upward


def test_no_module_imports_another_modules_private_names() -> None:
    private = [f"{path.relative_to(PACKAGE)}: {target}.{name}" for path in PACKAGE.rglob("*.py")
               for target, names in imports(path) for name in names if name.startswith("_")]
    assert not private, private


def test_the_stages_are_given_the_context_never_the_translator() -> None:
    readers = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
               if p.name not in ("translator.py", "__init__.py") or p.parent != PACKAGE
               if any(t == f"{PREFIX}.translator" for t, _ in imports(p))]
    assert not readers, readers
