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
NEUTRAL = ["settings", "data", "models", "ray_compat", "errors", "extras", "home", "lazy", "signatures", "command"]
NOT_EACH_OTHER = {"training": {"spec"}, "spec": {"training"}}


def _tuner_imports(path: Path) -> set[str]:
    """The tuner packages (second name: tuner.X) a module imports, at any depth of its code."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        modules = []
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
        names |= {m.split(".")[1] for m in modules if m.startswith("tuner.") and m.count(".") >= 1}
    return names


def _modules(part: str) -> list[Path]:
    folder = PACKAGE / part
    return sorted(folder.rglob("*.py")) if folder.is_dir() else [PACKAGE / f"{part}.py"]


@pytest.mark.parametrize("stage", STAGES)
def test_a_stage_imports_no_stage_after_it(stage):
    later = set(STAGES[STAGES.index(stage) + 1 :]) | NOT_EACH_OTHER.get(stage, set())
    for module in _modules(stage):
        assert not (_tuner_imports(module) & later), (
            f"{module.relative_to(PACKAGE)} imports {later & _tuner_imports(module)}"
        )


@pytest.mark.parametrize("part", NEUTRAL)
def test_the_neutral_parts_import_no_stage(part):
    for module in _modules(part):
        assert not (_tuner_imports(module) & set(STAGES)), f"{module.relative_to(PACKAGE)} imports a stage"


@pytest.mark.parametrize("module, name", sorted((m, n) for m, names in PICKLED_BY_PATH.items() for n in names))
def test_what_ray_pickles_by_path_is_at_its_stable_path(module, name):
    assert isinstance(getattr(importlib.import_module(module), name), type)
