"""Every third-party module tuner imports is installed by README's first command (`pip install -e .`, no
extras), or belongs to an optional extra that tuner/extras.py names and checks in one line.

The tests' own venv has every extra and more, so a missing declaration shows only on a user's plain
install (psutil: imported "as Ray's dependency", which Ray 2.60 no longer installs). The imports are
read from the source, not from this venv, and each is held to pyproject.toml's lists.
"""

import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from importlib import metadata

import pytest

from tests.conftest import REPO
from tuner.extras import EXTRAS

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

OWN = {"tuner", "search_spaces", "tests"}
# What the package ships and a user's code path reaches: its modules, the shipped spaces, the notebooks.
SOURCES = [*sorted((REPO / "tuner").rglob("*.py")), *sorted((REPO / "search_spaces").glob("*.py"))]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def _name(requirement: str) -> str:
    """A requirement's distribution name, normalised as PEP 503 does (`scikit-learn`, `ray`)."""
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
BASE = {_name(requirement) for requirement in PROJECT["dependencies"]}
OPTIONAL = {extra: {_name(r) for r in requirements} for extra, requirements in PROJECT["optional-dependencies"].items()}


INSTALLED = metadata.packages_distributions()  # read once: it walks every installed distribution


def _distributions(module: str) -> set[str]:
    """The distributions that install the top-level module `module`, as this venv has them; one that is
    not installed here (an extra the tests do not install) by its own name, as jupyterlab's is."""
    found = INSTALLED.get(module, [])
    return {_name(distribution) for distribution in found} or {_name(module)}


def _imports(tree: ast.Module) -> Iterator[tuple[str, int, bool]]:
    """(top-level module, line, at module level) of each absolute import; `if TYPE_CHECKING:` blocks
    are left out (they never run)."""
    skipped = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")
        for statement in block.body
        for node in ast.walk(statement)
    }
    top = {
        id(node)
        for statement in tree.body
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        for node in ast.walk(statement)
    }
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            yield name.split(".")[0], node.lineno, id(node) in top


def _sources() -> Iterator[tuple[str, ast.Module]]:
    for path in SOURCES:
        yield str(path.relative_to(REPO)), ast.parse(path.read_text())
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text())["cells"]
        code = "\n".join(
            "".join(line for line in cell["source"] if not line.lstrip().startswith(("%", "!")))
            for cell in cells
            if cell["cell_type"] == "code"
        )
        yield str(path.relative_to(REPO)), ast.parse(code)


def _third_party() -> list[tuple[str, str, int, bool]]:
    """(module, where, line, at module level) of every third-party import of the shipped code."""
    return [
        (module, where, line, top)
        for where, tree in _sources()
        for module, line, top in _imports(tree)
        if module not in sys.stdlib_module_names and module not in OWN
    ]


EXTRA_OF = {module: extra for extra, declared in EXTRAS.items() for module in declared.modules}


def test_the_sources_are_read():
    modules = {module for module, *_ in _third_party()}
    assert {"ray", "torch", "pandas", "psutil", "hyperopt", "ConfigSpace"} <= modules


def test_every_import_is_a_base_dependency_or_an_extra_tuner_checks_for():
    problems = []
    for module, where, line, _ in _third_party():
        distributions = _distributions(module)
        if distributions & BASE:
            continue
        if module in EXTRA_OF:
            if not distributions & OPTIONAL[EXTRA_OF[module]]:
                problems.append(f"{where}:{line}: {module} is not in the extra {EXTRA_OF[module]!r} of pyproject.toml")
            continue
        problems.append(
            f"{where}:{line}: imports {module} ({', '.join(sorted(distributions))}), which README's plain install "
            "does not bring: add it to [project] dependencies, or to an extra named in tuner/extras.py"
        )
    assert not problems, "\n".join(problems)


def test_an_extra_is_imported_only_inside_the_code_that_needs_it():
    """At module level, a missing extra would fail every command that imports the module, not the one
    that needs the extra with its one-line refusal."""
    problems = [
        f"{where}:{line}: {module} (extra {EXTRA_OF[module]}) imported at module level"
        for module, where, line, top in _third_party()
        if top and module in EXTRA_OF and not _distributions(module) & BASE
    ]
    assert not problems, "\n".join(problems)


def test_each_extra_tuner_names_is_declared_with_what_it_looks_for():
    for extra, declared in EXTRAS.items():
        assert extra in OPTIONAL, f"tuner/extras.py names {extra!r}, which pyproject.toml does not declare"
        for module in declared.modules:
            assert _distributions(module) & OPTIONAL[extra], f"{module} is not installed by the extra {extra!r}"


# The libraries only `tuner ui` and the reports' plots use. The GPU machine bench/gpu_check.sh runs on
# lacks them (../shared/device/README.md lists what it has), and a run there must still start: tuner.cli
# once imported the page's module for its default port, and `tuner run` failed there on `import bottle`.
PAGE_AND_PLOTS = ("bottle", "optuna_dashboard", "matplotlib")


def test_a_run_imports_neither_the_study_page_nor_the_plots():
    code = (
        "import sys\n"
        "import tuner, tuner.cli, tuner.execution.tune_run, tuner.execution.trainable, tuner.training.loop\n"
        f"print(','.join(m for m in {PAGE_AND_PLOTS!r} if m in sys.modules))"
    )
    imported = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert imported.returncode == 0, imported.stderr[-2000:]
    assert imported.stdout.strip() == "", f"a run's modules import {imported.stdout.strip()}"
