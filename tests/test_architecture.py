"""The layers and the module table of docs/architecture.md, checked on the source: what may
import what (every import, lazy ones too), every module listed, no private name imported
across modules, no estimator behind the metrics, no oversized module, and one public path per
name."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "abstain"

# Each layer (a package or a top-level module of abstain) and the layers it may import, by an
# import anywhere in a module: at module level, in a function, a method, ``__getattr__`` or an
# ``if TYPE_CHECKING:`` block. "exceptions" is a leaf every layer may use.
ALLOWED: dict[str, set[str]] = {
    "_core": set(),
    "tables": {"_core"},
    "_ood_search": {"_core", "tables"},
    "_certify": {"_core", "tables"},
    "metrics": {"_core", "tables", "_ood_search"},
    "scores": {"_core", "tables", "metrics"},
    "detectors": {"_core"},
    "combine": {"_core", "tables", "_ood_search", "metrics", "detectors"},
    "models": {"_core", "tables", "_ood_search", "_certify", "metrics", "scores", "detectors"},
    "ordinal": {"_core", "scores"},
    "plot": {"_core", "tables", "_ood_search", "metrics"},
    "evaluation": {"_core", "metrics", "scores", "models"},
    "datasets": {"_core"},
    "torch": {"_core", "tables", "metrics"},
    "distributed": {"_core", "tables"},
    "spark": {"_core", "tables"},
    "app": {"_core", "tables", "metrics", "models", "scores", "plot", "app", "abstain", "spark"},
    # abstain.load_json: imports every layer that registers serialisable kinds
    "_load": {"_core", "tables", "scores", "detectors", "combine", "models", "ordinal"},
}
# The imports that point up a layer, each inside one function and taken only when called:
# (importing module below abstain, imported module below abstain) -> reason.
LAZY_UP: dict[tuple[str, str], str] = {
    ("detectors/_logits.py", "torch"): "ODIN.score_inputs runs the PyTorch adapter's "
                                       "odin_logits on a model, only when called",
}
# The command line uses the library's public API; of the private core only its infrastructure.
APP_CORE = {"files", "optional", "parallel", "progress", "serialize", "version"}
# The module paths of the unreleased 0.1 development versions, deleted.
REMOVED = {"ood", "ood_metrics", "losses", "base_scores", "selective", "io", "tabular", "report",
           "cli", "demo"}


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py"))


_LAYERS = {p.stem for p in SRC.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}


def _layer(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _dotted(path: Path) -> list[str]:
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(path: Path) -> list[tuple[list[str], list[str], int]]:
    """``(target module parts below abstain, imported names, line)`` of every abstain import,
    at any depth of the module (lazy imports in functions and type-checking imports too)."""
    nodes = ast.walk(ast.parse(path.read_text()))
    package = _dotted(path) if path.name == "__init__.py" else _dotted(path)[:-1]
    out = []
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
                target = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "abstain":
                target = node.module.split(".")[1:]
            else:
                continue
            out.append((target, [a.name for a in node.names], node.lineno))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "abstain":
                    out.append((a.name.split(".")[1:], [], node.lineno))
    return out


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_layers_point_down(path: Path) -> None:
    layer = _layer(path)
    if layer in ("__init__", "__main__", "exceptions"):
        return
    assert layer in ALLOWED, f"{layer} is not in the layer table of this test"
    rel = path.relative_to(SRC).as_posix()
    for target, names, line in _imports(path):
        # `from .. import metrics` names the layer in the imported names; `from .. import
        # load_json` a public name of the top-level package ("abstain")
        for top in target[:1] or [n if n in _LAYERS else "abstain" for n in names]:
            if top in ("exceptions", layer) or (rel, ".".join(target or [top])) in LAZY_UP:
                continue
            assert top in ALLOWED[layer], (
                f"{path.relative_to(SRC)}:{line} ({layer}) imports {'.'.join(target or [top])}: "
                f"{layer} may import {sorted(ALLOWED[layer]) or 'nothing above it'}"
            )


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_private_name_across_modules(path: Path) -> None:
    for target, names, line in _imports(path):
        private = [n for n in names if n.startswith("_")]
        assert not private, (
            f"{path.relative_to(SRC)}:{line} imports private {private} from "
            f"{'.'.join(target)}: a name two modules share belongs in _core, unprefixed"
        )


def test_the_core_names_no_module_above_it() -> None:
    # not even as a string for importlib: a serialisable class joins the codec's registry when
    # its own module is imported, and abstain.load_json (abstain/_load.py) imports them all
    for path in sorted((SRC / "_core").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                named = re.fullmatch(r"\.*(?:abstain\.)?(\w+)(?:\.\w+)*", node.value)
                top = named[1] if named and "." in node.value else None
                assert top is None or top in ("_core", "exceptions") or top not in _LAYERS, (
                    f"{path.relative_to(SRC)} names the module {node.value!r}: the core "
                    "imports nothing above it")


def test_each_lazy_exception_is_still_taken() -> None:
    # an exception that no import needs any more leaves the list
    for (rel, target), _reason in LAZY_UP.items():
        taken = {".".join(t) for t, _, _ in _imports(SRC / rel)}
        assert target in taken, f"{rel} no longer imports {target}: drop it from LAZY_UP"


def test_the_command_line_uses_only_the_core_infrastructure() -> None:
    for path in sorted((SRC / "app").glob("*.py")):
        for target, names, line in _imports(path):
            # never a private module of a public layer: the layer's public names only
            private = target[:1] != ["app"] and any(p.startswith("_") for p in target[1:])
            assert not private, (
                f"{path.relative_to(SRC)}:{line} imports {names} from "
                f"{'.'.join(target)}: the command line imports public names from "
                f"abstain.{target[0]}"
            )
            if target[:1] == ["_core"]:
                used = target[1:2] or names
                assert set(used) <= APP_CORE, (
                    f"{path.relative_to(SRC)}:{line} imports _core.{'.'.join(used)}: the "
                    f"command line may use only {sorted(APP_CORE)} of the core"
                )


def _listed_modules() -> list[str]:
    """The modules that the table under "## Modules" of docs/architecture.md names, as paths
    below ``src/abstain``: one row per folder, ``| `abstain/<folder>/` | `<file>.py`, ... |``."""
    text = (SRC.parents[1] / "docs" / "architecture.md").read_text()
    section = text.split("\n## Modules\n", 1)[1].split("\n## ", 1)[0]
    listed = []
    for row in section.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`abstain/"):
            continue
        folder = cells[0].strip("`").removeprefix("abstain/")
        for name in cells[1].split(","):
            listed.append(folder + name.strip().strip("`"))
    return listed


def test_the_module_table_of_the_docs_matches_the_source() -> None:
    listed = _listed_modules()
    assert len(listed) > 50  # the table was found
    twice = sorted({m for m in listed if listed.count(m) > 1})
    assert twice == [], f"docs/architecture.md names {twice} twice"
    actual = {p.relative_to(SRC).as_posix() for p in _modules()}
    assert set(listed) - actual == set(), "docs/architecture.md names modules that do not exist"
    assert actual - set(listed) == set(), "modules missing from docs/architecture.md"


def _closure(start: list[Path]) -> set[Path]:
    seen: set[Path] = set()
    todo = list(start)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for target, names, _ in _imports(path):
            for parts in (target, *(target + [n] for n in names)):
                for cand in (SRC.joinpath(*parts).with_suffix(".py"),
                             SRC.joinpath(*parts, "__init__.py")):
                    if parts and cand.exists():
                        todo.append(cand)
    return seen


def test_metrics_never_fit_a_model() -> None:
    files = _closure(sorted((SRC / "metrics").glob("*.py")))
    assert SRC / "metrics" / "_ood.py" in files
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
                assert "fit" not in methods, (
                    f"{path.relative_to(SRC)} defines {node.name}.fit, and abstain.metrics "
                    "imports it: a metric must not depend on an estimator"
                )


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_module_size_and_no_backend_switch(path: Path) -> None:
    text = path.read_text()
    assert len(text.splitlines()) <= 800, f"{path.relative_to(SRC)} holds more than 800 lines"
    assert "matplotlib.use(" not in text, "library code must not switch the plotting backend"


def test_one_default_number_of_directions() -> None:
    uses = [f"{p.relative_to(SRC)}:{i}" for p in _modules()
            for i, line in enumerate(p.read_text().splitlines(), 1)
            if "360" in line and "N_DIRECTIONS = 360" not in line and "default 360" not in line]
    assert uses == []


def test_test_files_have_unique_basenames() -> None:
    # pytest imports each test file by its basename (the folders have no __init__.py)
    tests = Path(__file__).resolve().parent
    seen: dict[str, Path] = {}
    for path in sorted(tests.rglob("*.py")):
        if path.parent.name == "reference" or path.name == "__init__.py":
            continue
        assert path.name not in seen, f"{path} and {seen[path.name]} share a basename"
        seen[path.name] = path


# --------------------------------------------------------------------------- public names
def _public_modules() -> list[str]:
    """Every module of abstain whose dotted path has no component with a leading underscore
    (``abstain.torch`` only where PyTorch is installed)."""
    import abstain

    names = ["abstain"]
    for info in pkgutil.walk_packages(abstain.__path__, "abstain."):
        parts = info.name.split(".")[1:]
        if any(p.startswith("_") for p in parts):
            continue
        if parts[0] == "torch" and importlib.util.find_spec("torch") is None:
            continue
        if parts[-1] == "metrics" and parts[0] == "torch" and \
                importlib.util.find_spec("torchmetrics") is None:
            continue
        names.append(info.name)
    return names


#: Names that each engine module (abstain.distributed, abstain.spark) defines for itself.
ENGINE_VERBS = ("score_table", "pair_table")


def test_each_public_name_has_one_public_path() -> None:
    # as in sklearn.metrics: code in private modules, names in the subpackage __init__; the
    # top-level abstain re-exports a short list for newcomers (as numpy does), and no name
    # lives in two modules below it
    homes: dict[str, list[str]] = {}
    modules_found = _public_modules()
    for name in modules_found:
        module = importlib.import_module(name)
        for public in getattr(module, "__all__", []):
            assert getattr(module, public) is not None  # importable from there
            homes.setdefault(public, []).append(name)
    import abstain

    assert len(abstain.__all__) <= 15
    shared = {n: m for n, m in homes.items() if len(m) > 1}
    # the engines name their own builders of the same tables alike (as numpy.fft.fft and
    # scipy.fft.fft): different functions, one per engine
    for name in ENGINE_VERBS:
        assert homes[name] == ["abstain.distributed"] + (
            ["abstain.spark"] if "abstain.spark" in modules_found else [])
        shared.pop(name, None)
    for name, modules in shared.items():
        assert modules[0] == "abstain" and len(modules) == 2, (
            f"{name} is exported by {', '.join(modules)}: one public module per name")
        assert getattr(abstain, name) is getattr(importlib.import_module(modules[1]), name)
    assert len(homes) > 150  # the walk found the library


def test_every_name_of_a_private_module_is_public_once() -> None:
    # the __all__ of each private module of a public subpackage is exported by that subpackage
    for package in ("tables", "metrics", "scores", "detectors", "models", "combine", "plot"):
        public = importlib.import_module(f"abstain.{package}")
        for path in sorted((SRC / package).glob("_*.py")):
            if path.name == "__init__.py":
                continue
            module = importlib.import_module(f"abstain.{package}.{path.stem}")
            missing = set(getattr(module, "__all__", [])) - set(public.__all__)
            assert not missing, f"abstain.{package} does not export {sorted(missing)}"


@pytest.mark.parametrize("name", sorted(REMOVED))
def test_the_old_module_paths_are_gone(name: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(f"abstain.{name}")
