"""The package's layout: the commands (modules with a ``main``) stand on library modules, never on each other."""

import ast
from pathlib import Path

import annotated_transformer

PACKAGE = Path(annotated_transformer.__file__).parent
TREES = {path.stem: ast.parse(path.read_text(encoding="utf-8")) for path in PACKAGE.glob("*.py")}
COMMANDS = {name for name, tree in TREES.items()
            if any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body)}


def package_imports(tree: ast.Module) -> set[str]:
    """The package's modules that ``tree`` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "annotated_transformer":
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("annotated_transformer."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("annotated_transformer.")}
    return found


def test_every_command_is_found():
    assert COMMANDS >= {"train", "translate", "evaluate", "export", "visualize", "benchmark", "variations", "parsing"}


def test_no_command_imports_another_command():
    crossings = {name: sorted(package_imports(TREES[name]) & (COMMANDS - {name})) for name in COMMANDS}
    assert {name: others for name, others in crossings.items() if others} == {}


def test_the_walk_sees_imports_inside_functions():
    source = "def f():\n    from annotated_transformer.train import main\n    import annotated_transformer.data\n"
    tree = ast.parse(source)
    assert package_imports(tree) == {"train", "data"}
