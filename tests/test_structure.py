"""The package's layout: the paper's modules at the top of the package stand on each
other alone; the sub-packages (running, speed, measure, figures, text, book) stand on
the paper; the commands (modules with a ``main``) stand on both, never on each other.
Modules are named by their place in the package: ``running.trainer``."""

import argparse
import ast
from pathlib import Path

import pytest

import annotated_transformer

PACKAGE = Path(annotated_transformer.__file__).parent


def module_name(path: Path) -> str:
    """``running.trainer`` for ``annotated_transformer/running/trainer.py``."""
    return path.relative_to(PACKAGE).with_suffix("").as_posix().replace("/", ".")


TREES = {
    module_name(path): ast.parse(path.read_text(encoding="utf-8"))
    for path in PACKAGE.rglob("*.py")
    if path.name not in ("__init__.py", "__main__.py")  # hand-written doors
}
SUBPACKAGES = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
COMMANDS = {
    name
    for name, tree in TREES.items()
    if any(
        isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body
    )
}


def package_imports(tree: ast.Module, modules=None) -> set[str]:
    """The package's modules that ``tree`` imports, at the top or inside a function:
    ``from annotated_transformer.running import trainer`` and ``from
    annotated_transformer.running.trainer import Meter`` both import
    ``running.trainer``."""
    modules = set(TREES) if modules is None else modules
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "annotated_transformer"
        ):
            base = node.module.removeprefix("annotated_transformer").lstrip(".")
            for alias in node.names:
                whole = f"{base}.{alias.name}".lstrip(".")
                found.add(whole if whole in modules else base)
        elif isinstance(node, ast.Import):
            found |= {
                a.name.removeprefix("annotated_transformer.")
                for a in node.names
                if a.name.startswith("annotated_transformer.")
            }
    return found - {""}


# The paper's model and its decoding and training arithmetic: what a student reads
# first.
CORE = {"model", "layers", "attention", "positional", "decoding", "optimization"}
# The paper's modules with the batch and the settings: the top of the package, which
# `ls` shows first beside the commands.
PAPER = CORE | {"data", "config", "copy_task"}
# Speed code, measurement, references, the training loop and the commands: built on the
# core, never under it.
ABOVE_THE_CORE = {
    "speed.choice",
    "speed.batchers",
    "speed.ct2",
    "measure.performance",
    "measure.reference",
    "measure.training",
    "measure.decoding",
    "measure.data_feed",
    "measure.kv_cache",
    "measure.threads",
    "benchmark",
    "running.trainer",
}


def import_graph(trees: dict[str, ast.Module]) -> dict[str, set[str]]:
    return {
        name: package_imports(tree) & set(trees) - {name}
        for name, tree in trees.items()
    }


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of imports (its modules, the first repeated at the end), or None."""
    done, path = set(), []

    def visit(name):
        if name in path:
            return path[path.index(name) :] + [name]
        if name in done:
            return None
        path.append(name)
        for other in sorted(graph.get(name, ())):
            if circle := visit(other):
                return circle
        path.pop()
        done.add(name)
        return None

    return next((c for name in sorted(graph) if (c := visit(name))), None)


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for other in graph.get(todo.pop(), ()):
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return seen


def test_no_module_imports_itself_through_others():
    assert find_circle(import_graph(TREES)) is None


def test_ls_shows_the_paper_the_commands_and_a_few_named_folders():
    """The top of the package holds the paper's modules, the settings and the commands
    (each named after what it does); everything else lives in a sub-package whose
    ``__init__`` docstring says what it holds."""
    top = {name for name in TREES if "." not in name}
    assert top == PAPER | COMMANDS | {"cli"}
    assert SUBPACKAGES == {"running", "speed", "measure", "figures", "text", "book"}
    for folder in SUBPACKAGES:
        face = ast.parse((PACKAGE / folder / "__init__.py").read_text("utf-8"))
        assert ast.get_docstring(face) and len(face.body) == 1, folder


def test_no_import_climbs_back_up():
    """The paper's modules import only each other; a sub-package's module imports the
    paper and other sub-packages, never a command."""
    graph = import_graph(TREES)
    assert {
        name: sorted(graph[name] - PAPER)
        for name in sorted(PAPER)
        if graph[name] - PAPER
    } == {}
    below_commands = set(TREES) - COMMANDS - {"cli"}
    assert {
        name: sorted(graph[name] & (COMMANDS | {"cli"}))
        for name in sorted(below_commands)
        if graph[name] & (COMMANDS | {"cli"})
    } == {}


def test_the_circle_finder_finds_a_circle_and_only_a_circle():
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [
        "a",
        "b",
        "c",
        "a",
    ]
    assert find_circle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_core_stands_on_no_speed_measurement_or_command_module():
    graph = import_graph(TREES)
    above = ABOVE_THE_CORE | COMMANDS
    assert CORE <= set(TREES) and ABOVE_THE_CORE <= set(TREES)
    assert {
        name: sorted(reachable(graph, name) & above) for name in sorted(CORE)
    } == dict.fromkeys(sorted(CORE), [])


def test_every_command_is_found():
    """Every module with a ``main`` is a command of the console script, and each of the
    console script's commands is such a module."""
    from annotated_transformer.cli import COMMANDS as CONSOLE

    assert COMMANDS >= {"train", "translate", "evaluate", "bundle", "visualize"}
    assert COMMANDS == set(CONSOLE)


def test_no_command_imports_another_command():
    crossings = {
        name: sorted(package_imports(TREES[name]) & (COMMANDS - {name}))
        for name in COMMANDS
    }
    assert {name: others for name, others in crossings.items() if others} == {}


def test_the_walk_sees_imports_inside_functions():
    source = (
        "def f():\n    from annotated_transformer.train import main\n    import "
        "annotated_transformer.data\n"
    )
    tree = ast.parse(source)
    assert package_imports(tree) == {"train", "data"}
    nested = ast.parse(
        "from annotated_transformer.running import trainer\n"
        "from annotated_transformer.speed.choice import FastPaths\n"
    )
    assert package_imports(nested) == {"running.trainer", "speed.choice"}


def test_the_reserved_token_ids_are_defined_once_in_data():
    defining = {
        name
        for name, tree in TREES.items()
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(
            isinstance(t, (ast.Tuple, ast.Name)) and "PAD" in ast.dump(t)
            for t in node.targets
        )
    }
    assert defining == {"data"}


# What reaches the network: the standard library's clients and the packages that the
# corpora download with (sacreBLEU's test sets, Hugging Face's datasets).
NETWORK = {
    "urllib",
    "http",
    "ftplib",
    "socket",
    "requests",
    "urllib3",
    "httpx",
    "datasets",
    "huggingface_hub",
    "sacrebleu",
}


def imported_modules(tree: ast.Module) -> set[str]:
    """The top-level names of every module ``tree`` imports, at the top or inside a
    function (``urllib`` for ``import urllib.request``)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_data_is_batches_and_tokens_and_never_reaches_the_network():
    """``data`` (the batches, the vocabulary) stands apart from ``corpora``, which
    finds, reads and downloads text: neither it nor anything it imports reaches the
    network."""
    graph = import_graph(TREES)
    under_data = {"data"} | reachable(graph, "data")
    assert "text.corpora" not in under_data
    assert {
        name: sorted(imported_modules(TREES[name]) & NETWORK)
        for name in sorted(under_data)
    } == dict.fromkeys(sorted(under_data), [])
    # the walk does see the downloads, where they are
    assert {"urllib", "datasets", "sacrebleu"} <= imported_modules(
        TREES["text.corpora"]
    )


class _Parsed(Exception):
    """Raised instead of parsing, to hand a command's finished parser to the test."""


def command_parsers(module) -> dict[str, argparse.ArgumentParser]:
    """The parser of ``module``'s command and those of its modes, by name
    (``benchmark``, ``benchmark train``, ...)."""

    def capture(parser, *args, **kwargs):
        raise _Parsed(parser)

    patch = pytest.MonkeyPatch()
    patch.setattr(argparse.ArgumentParser, "parse_args", capture)
    try:
        module.main([])
    except _Parsed as parsed:
        todo = [(module.__name__.rsplit(".", 1)[-1], parsed.args[0])]
    finally:
        patch.undo()
    found = {}
    while todo:
        name, parser = todo.pop()
        found[name] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [(f"{name} {k}", v) for k, v in action.choices.items()]
    return found


def every_parser() -> dict[str, argparse.ArgumentParser]:
    """The parsers of every command and of each of its modes."""
    import importlib

    return {
        label: parser
        for name in sorted(COMMANDS)
        for label, parser in command_parsers(
            importlib.import_module(f"annotated_transformer.{name}")
        ).items()
    }


def long_options(parser) -> list[tuple[frozenset, argparse.Action]]:
    """Each option of ``parser`` with a long name: (its long names, its action)."""
    return [
        (frozenset(o for o in action.option_strings if o.startswith("--")), action)
        for action in parser._actions
        if any(o.startswith("--") for o in action.option_strings)
    ]


def test_every_command_calls_a_setting_by_the_same_names():
    seen, clashes = {}, []
    for label, parser in every_parser().items():
        for names, _ in long_options(parser):
            for option in names:
                if option in seen and seen[option][1] != names:
                    first, their = seen[option]
                    clashes.append(
                        f"{option}: {sorted(their)} in {first}, {sorted(names)} in "
                        f"{label}"
                    )
                seen.setdefault(option, (label, names))
    assert clashes == []
    assert len(seen) > 60  # the walk did reach the commands' options


def setting_options() -> dict[str, str]:
    """Every name of a setting's option (``--run`` and ``--out-dir`` for ``out_dir``,
    fairseq's names too) -> the setting's field name."""
    from dataclasses import fields

    from annotated_transformer.config import (
        OPTION_ALIASES,
        DecodeConfig,
        RunConfig,
        TransformerConfig,
        option,
    )

    return {
        name: f.name
        for config in (TransformerConfig, RunConfig, DecodeConfig)
        for f in fields(config)
        for name in (option(f.name), *OPTION_ALIASES.get(f.name, ()))
    }


def differences_from_the_setting(action: argparse.Action, setting: str) -> list[str]:
    """How an option differs from the one ``add_setting_option`` makes of the field
    ``setting``: in its names, its kind, type, choices or metavar, or in a help text
    that is not the field's followed by the command's default."""
    from annotated_transformer.cli import SETTINGS, add_setting_option

    made = add_setting_option(argparse.ArgumentParser(), setting)
    help_text = SETTINGS[setting].metadata["help"]
    found = [
        what
        for what, ours, theirs in (
            ("names", sorted(action.option_strings), sorted(made.option_strings)),
            ("kind", type(action), type(made)),
            ("type", action.type, made.type),
            ("choices", action.choices, made.choices),
            ("metavar", action.metavar, made.metavar),
        )
        if ours != theirs
    ]
    said = action.help or ""
    if not (said.startswith(f"{help_text} (default: ") and said.endswith(")")):
        found.append(f"help {said!r}")
    return found


def test_every_option_named_after_a_setting_is_made_from_its_field():
    """An option with a setting's name is that setting, in every command and mode
    (train and benchmark included): its names, help, type, choices and metavar come
    from the field; only the default differs from command to command."""
    settings, checked, wrong = setting_options(), set(), []
    for label, parser in every_parser().items():
        for names, action in long_options(parser):
            for setting in sorted({settings[n] for n in names if n in settings}):
                checked.add(label)
                wrong += [
                    f"{label} {sorted(names)[0]}: {difference}"
                    for difference in differences_from_the_setting(action, setting)
                ]
    assert wrong == []
    assert {"train", "translate", "parsing", "variations"} <= checked
    assert {"benchmark train", "benchmark decode", "benchmark data"} <= checked


def test_a_setting_option_has_its_fields_type_and_choices():
    from annotated_transformer.cli import SETTINGS, add_setting_option
    from annotated_transformer.config import INITIALIZATIONS, POSITIONAL_KINDS
    from annotated_transformer.text import corpora

    parser = argparse.ArgumentParser()
    for name in ("d_k", "lr_factor", "threads", "bf16", "positional", "init", "corpus"):
        add_setting_option(parser, name)
    args = parser.parse_args(
        "--d-k none --lr-factor 0.5 --threads 3 --no-bf16 --positional learned "
        "--init xavier --corpus text".split()
    )
    assert (args.d_k, args.lr_factor, args.threads, args.bf16) == (None, 0.5, 3, False)
    assert (args.positional, args.init, args.corpus) == ("learned", "xavier", "text")
    choices = {a.dest: a.choices for a in parser._actions if a.choices}
    assert choices == {
        "positional": list(POSITIONAL_KINDS),
        "init": list(INITIALIZATIONS),
        "corpus": list(corpora.CORPORA),
    }
    assert parser.get_default("threads") == SETTINGS["threads"].default == 0
    with pytest.raises(SystemExit):
        parser.parse_args(["--threads", "two"])


def literal_options(trees: dict[str, ast.Module]) -> list[tuple[str, str]]:
    """(module, option) for every ``add_argument`` call that names its option by a
    literal string."""
    return [
        (name, node.args[0].value)
        for name, tree in trees.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", "") == "add_argument"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    ]


# The options several commands take that set no setting, each declared once in cli.
SHARED = ("--progress", "--checkpoint")


def test_the_shared_options_are_defined_once():
    """No module spells out the option of a setting (``add_setting_option`` makes each
    from its field), and each other shared option is declared in cli alone."""
    declared, settings = literal_options(TREES), setting_options()
    assert [(m, o) for m, o in declared if o in settings] == []
    assert sorted((m, o) for m, o in declared if o in SHARED) == sorted(
        ("cli", option) for option in SHARED
    )
    # the walk sees declarations where they are
    assert ("train", "--task") in declared and ("benchmark", "--paths") in declared


NAMED_KINDS = {
    "positional kinds": {"sinusoidal", "learned"},
    "initializations": {"pytorch", "xavier"},
}


def named_kinds(trees: dict[str, ast.Module]) -> dict[str, list[str]]:
    """Where the names of the positional kinds, or of the initializations, are listed
    side by side (in a tuple, list or set, or as a dict's keys): what -> places."""
    places = {what: [] for what in NAMED_KINDS}
    for name, tree in sorted(trees.items()):
        for node in ast.walk(tree):
            elements = getattr(node, "elts", None) or getattr(node, "keys", None) or []
            listed = {getattr(e, "value", None) for e in elements}
            for what, pair in NAMED_KINDS.items():
                if pair <= listed:
                    places[what].append(f"{name}.py:{node.lineno}")
    return places


def test_the_positional_kinds_and_the_initializations_are_listed_once():
    """Each list is written once; the checks of the settings, the options' choices and
    the tests read it from there (config's POSITIONAL_KINDS and INITIALIZATIONS)."""
    from annotated_transformer.config import INITIALIZATIONS, POSITIONAL_KINDS

    assert NAMED_KINDS["positional kinds"] <= set(POSITIONAL_KINDS)
    assert NAMED_KINDS["initializations"] <= set(INITIALIZATIONS)
    assert {what: len(places) for what, places in named_kinds(TREES).items()} == {
        what: 1 for what in NAMED_KINDS
    }
    twice = ast.parse("A = ('pytorch', 'xavier')\nB = {'xavier': 1, 'pytorch': 2}")
    assert named_kinds({"x": twice})["initializations"] == ["x.py:1", "x.py:2"]


def test_every_setting_and_preset_is_defined_in_config():
    settings = (
        "RunConfig",
        "TransformerConfig",
        "PRESETS",
        "RUN_PRESETS",
        "COPY_MODEL",
        "PARSING_MODEL",
        "PARSING_RUN",
        "TABLE3_SIZES",
    )
    defined = {}
    for name, tree in TREES.items():
        for node in tree.body:
            targets = (
                [node.name]
                if isinstance(node, ast.ClassDef)
                else [
                    t.id
                    for t in getattr(node, "targets", [])
                    if isinstance(t, ast.Name)
                ]
            )
            defined.update({target: name for target in targets if target in settings})
    assert defined == dict.fromkeys(settings, "config")


# Read on code as ruff format lays it out (make check enforces it), where a call that
# does not fit on a line takes a line per argument: a function that outgrows these is
# split by meaning, never packed.
LONGEST_FUNCTION = 60
MOST_PARAMETERS = 6
LONGEST_LOOP_MODULE = 800
# The functions that read better whole, and why.
LONG_BY_NATURE = {
    "speed.ct2.ctranslate2_spec": "one table: each line puts one of our weights into "
    "the place CTranslate2's spec has for it",
    "figures.views.line_view": "one figure, Figure 3's lines, drawn top to bottom",
    "figures.views.grid_view": "one figure, a grid of heatmaps, drawn top to bottom",
    "parsing.build_parser": "the parsing command's options, one add_argument each",
    "visualize.build_parser": "the visualize command's options, one add_argument each",
}
MANY_PARAMETERS_BY_NATURE = {
    "optimization.accumulate_gradients": "chapter 11 spells out every input of an "
    "update; Update bundles them for the loop",
    "copy_task.train_copy_task": "the first example's knobs, each with the default "
    "that chapter 9 explains",
    "decoding.beam_search": "the search of §6.1 and what restricts it (n_best, "
    "allowed), as chapter 14 introduces them",
    "decoding.next_log_probs": "one step of the search: the decoder's inputs and "
    "its cache, the rule, the beam",
    "decoding.translate_sentences": "model, vocabulary, text, device, settings, "
    "progress and an output rule: what every translating command passes",
    "text.scoring.evaluate": "the same, with the pairs' target language for the scores",
    "parsing.parse_and_score": "the same, with the grammar that keeps outputs to trees",
    "figures.views.line_view": "a drawing's options, each a keyword, as matplotlib's "
    "own",
    "figures.views.grid_view": "a drawing's options, each a keyword, as matplotlib's "
    "own",
}


def parameters(node: ast.FunctionDef) -> list[str]:
    a = node.args
    names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    names += [p.arg for p in (a.vararg, a.kwarg) if p]
    return [n for n in names if n not in ("self", "cls")]


def oversized(trees: dict[str, ast.Module]) -> tuple[dict, dict]:
    """Functions over LONGEST_FUNCTION lines, and with more than MOST_PARAMETERS
    parameters (``self`` and ``cls`` not counted): name -> how many."""
    long, crowded = {}, {}
    for name, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > LONGEST_FUNCTION:
                    long[f"{name}.{node.name}"] = lines
                if len(parameters(node)) > MOST_PARAMETERS:
                    crowded[f"{name}.{node.name}"] = len(parameters(node))
    return long, crowded


def test_functions_stay_short_with_few_parameters_and_the_loop_module_small():
    long, crowded = oversized(TREES)
    assert sorted(set(long) - set(LONG_BY_NATURE)) == []
    assert sorted(set(crowded) - set(MANY_PARAMETERS_BY_NATURE)) == []
    # an exception that no longer applies is taken off the list
    assert sorted(set(LONG_BY_NATURE) - set(long)) == []
    assert sorted(set(MANY_PARAMETERS_BY_NATURE) - set(crowded)) == []
    trainer = (PACKAGE / "running" / "trainer.py").read_text(encoding="utf-8")
    assert len(trainer.splitlines()) <= LONGEST_LOOP_MODULE


def test_the_size_measure_counts_lines_and_parameters():
    source = "def f(self, a, b, c, d, e, f, *g):\n" + "    x = 1\n" * 60
    long, crowded = oversized({"m": ast.parse(source)})
    assert long == {"m.f": 61} and crowded == {"m.f": 7}


# Every fast-path decision is taken in `speed` (appendix A): elsewhere no module
# compiles, opens bf16 autocast or chooses a fused kernel by the device.
FAST_PATH_CALLS = {
    "torch.compile",
    "torch.autocast",
    "torch.bfloat16",
    "batchers.compiled",
}
FAST_PATH_SWITCHES = {"fused_attention", "fused", "token_cache", "incremental"}


def fast_path_decisions(tree: ast.Module) -> list[str]:
    """Uses of the compiler and of bf16, and fast-path switches set to a value that is
    decided on the spot: a constant, a comparison, or anything that looks at the
    device. Passing on a value decided elsewhere (``fused=fast.fused_adam``, a
    parameter of the same name) is not a decision."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and ast.unparse(node) in FAST_PATH_CALLS:
            found.append(ast.unparse(node))
        for keyword in (
            getattr(node, "keywords", []) if isinstance(node, ast.Call) else []
        ):
            value = keyword.value
            decided = isinstance(value, (ast.Constant, ast.Compare)) or any(
                w in ast.unparse(value) for w in ("cuda", "gpu", "startswith")
            )
            if keyword.arg in FAST_PATH_SWITCHES and decided:
                found.append(f"{keyword.arg}={ast.unparse(value)}")
    return found


def test_every_fast_path_is_decided_in_speed():
    decided = {
        name: found
        for name, tree in sorted(TREES.items())
        if not name.startswith("speed.") and (found := fast_path_decisions(tree))
    }
    assert decided == {}
    # the walk sees them where they are
    assert fast_path_decisions(TREES["speed.choice"])


def test_the_decision_finder_tells_deciding_from_passing_on():
    source = (
        "make_model(c.replace(fused_attention=device.startswith('cuda')))\n"
        "make_optimizer(m, fused=on_gpu)\n"
        "f = torch.compile(g)\n"
        "make_optimizer(m, fused=fast.fused_adam)\n"
        "greedy_decode(m, s, incremental=incremental)\n"
    )
    assert sorted(fast_path_decisions(ast.parse(source))) == [
        "fused=on_gpu",
        "fused_attention=device.startswith('cuda')",
        "torch.compile",
    ]


# Each command asks `speed.choice.fast_paths` once, where it starts, and hands the
# answer (a frozen FastPaths) down: a library function that asked again could choose
# differently from the command that called it.
ASKING = {"fast_paths", "all_fast_paths"}  # and its former name, should it come back
FAST_PATH_ENTRY_POINTS = {
    # train, variations and parsing train through it, and so do the chapters
    "running.trainer.start",
    # translate, evaluate and visualize load their model and decode through it
    "cli.model_from_args",
    # benchmark train: every implementation takes its part of one decision
    "measure.training.time_paths",
    # benchmark data: a process of its own makes one update
    "measure.data_feed.data_worker",
    # benchmark decode: a process of its own loads each engine
    "measure.decoding.decode_worker",
}


def fast_path_askers(tree: ast.Module, module: str) -> dict[str, int]:
    """How many times each function of ``module`` names ``fast_paths`` (a call, or the
    function handed on to be called later), by its dotted name. Code outside any
    function, such as a default computed at import, counts as the module's."""
    asked = {}

    def visit(node: ast.AST, owner: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = owner
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = f"{owner}.{child.name}"
            name = getattr(child, "attr", None) or getattr(child, "id", None)
            if isinstance(child, (ast.Attribute, ast.Name)) and name in ASKING:
                asked[owner] = asked.get(owner, 0) + 1
            visit(child, inner)

    visit(tree, module)
    return asked


def test_each_entry_point_asks_for_the_fast_paths_once_and_hands_them_down():
    asked = {}
    for name, tree in sorted(TREES.items()):
        if name != "speed.choice":  # where the answer is computed
            asked.update(fast_path_askers(tree, name))
    assert asked == dict.fromkeys(FAST_PATH_ENTRY_POINTS, 1)


def test_the_asker_finder_sees_calls_defaults_methods_and_handed_on_functions():
    source = (
        "def entry(device):\n"
        "    return work(choice.fast_paths(device))\n"
        "def library(settings, fast):\n"
        "    return choice.decoding(settings, fast), s.fast_paths_taken()\n"
        "def prepare(token_cache=choice.fast_paths().token_cache):\n"
        "    return {'fast_paths': token_cache}\n"
        "class Loader:\n"
        "    def load(self, device):\n"
        "        ask = choice.all_fast_paths\n"
        "        return ask(device), fast_paths(device)\n"
        "DEFAULT = choice.fast_paths()\n"
    )
    asked = fast_path_askers(ast.parse(source), "m")
    assert asked == {"m.entry": 1, "m.prepare": 1, "m.Loader.load": 2, "m": 1}
    # declared as the one entry point, "entry" leaves the others found: the test fails
    assert set(asked) - {"m.entry"} == {"m.prepare", "m.Loader.load", "m"}


def test_the_commands_load_no_training_loop_and_the_loop_no_command():
    graph = import_graph(TREES)
    # translate, evaluate, bundle and visualize share cli: it chooses a device, not
    # a trainer
    assert "running.trainer" not in reachable(graph, "cli")
    assert "running.trainer" not in reachable(graph, "translate")
    # the band's note comes from a neutral module, not from the band command
    assert "running.recipes" in reachable(graph, "running.trainer")
    assert reachable(graph, "running.trainer") & COMMANDS == set()


# Read on code as ruff format lays it out: a call with more arguments passes them by
# name, so that a reader sees which is which.
MOST_POSITIONAL_ARGUMENTS = 6


def crowded_calls(trees: dict[str, ast.Module]) -> list[str]:
    return [
        f"{name}.py:{node.lineno} {ast.unparse(node.func)}"
        for name, tree in sorted(trees.items())
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and len(node.args) > MOST_POSITIONAL_ARGUMENTS
    ]


def test_no_call_passes_more_than_six_positional_arguments():
    assert crowded_calls(TREES) == []
    seven = ast.parse("f(1, 2, 3, 4, 5, 6, 7)\nf(1, 2, 3, 4, 5, 6, seven=7)")
    assert crowded_calls({"x": seven}) == ["x.py:1 f"]
