"""The package's import layering, read from the source: each stage imports only the stages before it
(spec, search, training, storage, execution, results), `spec` and `training` not each other, and the
neutral packages (settings, data, models, ray_compat and the top-level helpers) no stage at all."""

import ast
import importlib
from pathlib import Path

import pytest

from tuner.ray_compat import PICKLED_BY_PATH

PACKAGE = Path(__file__).resolve().parent.parent / "tuner"
STAGES = ["spec", "search", "training", "storage", "execution", "results"]
NEUTRAL = [
    *("settings", "data", "models", "ray_compat", "errors", "extras", "home", "lazy", "signatures", "command"),
    *("trial_status", "environment"),
]
# `import tuner` (or `import tuner as t`): the package's root, whose names lazily import every stage.
ROOT = "<tuner>"
NOT_EACH_OTHER = {"training": {"spec"}, "spec": {"training"}}


def _tuner_imports(path: Path) -> set[str]:
    """The tuner packages (second name: tuner.X) a module imports, at any depth of its code, whichever
    way it is written: `import tuner.X`, `from tuner.X import ...`, `from tuner import X`, and `import
    tuner` as ROOT."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        modules = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
            names |= {ROOT for alias in node.names if alias.name == "tuner"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
            if node.module == "tuner":
                names |= {alias.name for alias in node.names}
        names |= {m.split(".")[1] for m in modules if m.startswith("tuner.") and m.count(".") >= 1}
    return names


def test_every_way_of_writing_an_import_is_read(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import tuner\nfrom tuner import results\nimport tuner.search.plan\nfrom tuner.spec import x\n")
    assert _tuner_imports(module) == {ROOT, "results", "search", "spec"}


def _modules(part: str) -> list[Path]:
    folder = PACKAGE / part
    return sorted(folder.rglob("*.py")) if folder.is_dir() else [PACKAGE / f"{part}.py"]


@pytest.mark.parametrize("stage", STAGES)
def test_a_stage_imports_no_stage_after_it(stage):
    later = set(STAGES[STAGES.index(stage) + 1 :]) | NOT_EACH_OTHER.get(stage, set()) | {ROOT}
    for module in _modules(stage):
        assert not (_tuner_imports(module) & later), (
            f"{module.relative_to(PACKAGE)} imports {later & _tuner_imports(module)}"
        )


@pytest.mark.parametrize("part", NEUTRAL)
def test_the_neutral_parts_import_no_stage(part):
    for module in _modules(part):
        assert not (_tuner_imports(module) & {*STAGES, ROOT}), f"{module.relative_to(PACKAGE)} imports a stage"


@pytest.mark.parametrize("module, name", sorted((m, n) for m, names in PICKLED_BY_PATH.items() for n in names))
def test_what_ray_pickles_by_path_is_at_its_stable_path(module, name):
    assert isinstance(getattr(importlib.import_module(module), name), type)
