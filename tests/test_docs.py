"""README and the docs pages cannot drift from what their commands do: the site builds strictly, every
Python snippet runs (the space modules through the smoke step, the API and notebook snippets as one real
run), every shell command is one tuner's parser or the named script accepts, README's sample output has
the shape a real run prints (the real run's side is in tests/execution/test_console.py), and the
benchmark tables are the ones the benchmark prints."""

import math
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import tuner
from tests import pages
from tests.conftest import REPO, run_tuner
from tuner import cli
from tuner.execution import preparation
from tuner.spec.space import load as load_space

SETUP = ("python3 -m venv .venv",)  # how both setup lines begin: a user runs the first, CI the second (.ci/run)


def test_the_site_builds_strictly(tmp_path):
    """Every page in the nav and every page linked, each link to a page that exists, and the API
    reference's names found in the package: any warning fails a strict build."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    mkdocs = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")]
    built = subprocess.run(mkdocs, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    reference = (tmp_path / "site" / "reference" / "index.html").read_text()
    assert all(f"tuner.{name}" in reference for name in tuner.__all__)


def test_every_page_is_in_the_sites_nav_and_readmes_table():
    import yaml

    nav = {next(iter(entry.values())) for entry in yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]}
    on_disk = {page.name for page in pages.DOCS.glob("*.md")}
    assert nav == on_disk
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)\)", pages.README.read_text()))
    assert linked == on_disk - {"index.md"}


def is_setup(block: pages.Block) -> bool:
    """A block of the two commands, as README gives them (and the docs' first pages repeat)."""
    return block.text.startswith(SETUP)


def commands() -> list[tuple[pages.Block, list[str]]]:
    """Every command in the bash blocks of README and the docs, as argv (a line of `&&`-joined commands
    gives each)."""
    found = []
    for block in pages.every_block("bash"):
        for line in block.text.splitlines():
            for command in line.split(" && "):
                argv = shlex.split(command, comments=True)
                if argv:
                    found.append((block, argv))
    return found


def test_every_command_after_setup_is_typed_as_tuner_and_the_setup_leaves_it_typeable():
    first = pages.blocks("bash")[0].text.strip()
    assert first.startswith(SETUP) and "source .venv/bin/activate" in first and first.endswith("&& tuner run")
    assert pages.blocks("bash")[1].text.startswith(SETUP)
    # Every command and every printed hint after setup is `tuner` (prose may say `python -m tuner` works too).
    assert not [block.where for block in pages.every_block() if "python -m tuner" in block.text]
    later = [argv for block, argv in commands() if not is_setup(block)]
    assert not [argv for argv in later if argv[0].startswith(".venv/") or argv[:3] == ["python", "-m", "tuner"]]
    # The docs' copies of the two commands are README's, word for word.
    readme_setup = {block.text for block in pages.blocks("bash")[:2]}
    assert {block.text for block in pages.every_block("bash") if is_setup(block)} == readme_setup


def test_every_tuner_command_in_the_docs_is_accepted_by_tuners_parser():
    tuner_commands = [argv for _, argv in commands() if argv[0] == "tuner"]
    assert len(tuner_commands) >= 10  # the run, cluster and report blocks
    for argv in tuner_commands:
        try:
            cli._parser().parse_args(argv[1:])
        except SystemExit as refused:
            pytest.fail(f"`{shlex.join(argv)}` is refused by tuner's parser (exit {refused.code})")


SHELL = ("echo", "mkdir", "sleep", "export")  # the shell's own, in the steps README shows around tuner's


def test_every_other_command_names_a_script_here_and_only_options_it_has():
    for block, argv in commands():
        if argv[0] == "tuner" or is_setup(block):
            continue  # parsed above; the setup lines run in CI and as README's first command
        # Ray's own command, in the environment the first command activates; SeaweedFS's and MkDocs', from
        # the packages the pages name
        if argv[0] in ("ray", "weed", "mkdocs"):
            assert (Path(sys.executable).parent / argv[0]).exists()
            continue
        if argv[0] in SHELL or argv[:2] == ["pip", "install"]:
            continue
        assert argv[0] in ("python", "bash"), f"{block.where}: a command this test does not know: {argv}"
        script = REPO / argv[1]
        assert script.is_file(), f"{block.where}: {argv[1]} does not exist"
        options = script.read_text()
        if "import asha_shapes" in options:  # its options come from bench/asha_shapes.py
            options += (REPO / "bench" / "asha_shapes.py").read_text()
        for flag in (token for token in argv[2:] if token.startswith("--")):
            assert f'"{flag}"' in options, f"{block.where}: {argv[1]} has no option {flag}"


def _describe(spec) -> dict:
    """What a space sets, comparable between two modules (Ray's domains compare by identity)."""

    def value(item):
        if isinstance(item, dict):
            return {key: value(inner) for key, inner in item.items()}
        if hasattr(item, "sampler"):  # a Ray Tune domain: its kind, bounds or choices, and sampling
            fields = ("lower", "upper", "categories")
            return (type(item).__name__, type(item.sampler).__name__, *(getattr(item, f, None) for f in fields))
        return item

    return {
        "objective": spec.objective,
        "budget": spec.budget,
        "resources": spec.resources,
        "tuning": spec.tuning,
        "param_space": value(spec.param_space),
        "conditions": spec.conditions,
    }


SPACE_BLOCKS = [block for block in pages.every_block("python") if "\nparam_space = {" in block.text]


def test_the_docs_show_both_tiers_of_space_module():
    assert [block.before.rsplit("`search_spaces/", 1)[1].split("`")[0] for block in SPACE_BLOCKS] == [
        "wine_mlp.py",
        "digits_own_loop.py",
        "digits_conditional.py",
    ]


@pytest.mark.parametrize("block", SPACE_BLOCKS, ids=lambda block: block.where)
def test_each_space_snippet_is_a_whole_module_that_runs_and_is_the_shipped_one(block, tmp_path):
    shipped = REPO / "search_spaces" / block.before.rsplit("`search_spaces/", 1)[1].split("`")[0]
    path = tmp_path / f"docs_{shipped.name}"
    path.write_text(block.text)
    spec = load_space(str(path))
    # Its own code, one batch up to its first report, as `tuner run` checks it before any trial: no
    # undefined name, no `...`, and the metric reported.
    preparation.load_and_smoke(spec, seed=0, smoke_step=True)
    assert _describe(spec) == _describe(load_space(str(shipped)))
    if spec.train_loop is not None:
        # Tier 2 is the shipped module as it is (its docstring aside), so how it keeps its state cannot
        # drift from what the example does.
        code = shipped.read_text()
        assert block.text == code[code.index('"""', 3) + 3 :].lstrip("\n")


def test_every_python_snippet_is_run_by_a_test_here():
    others = [block for block in pages.every_block("python") if block not in SPACE_BLOCKS]
    assert [block.before.split(" ")[0] for block in others] == ["From", "In"]  # API_AND_NOTEBOOK below


API_AND_NOTEBOOK = [
    block for block in pages.every_block("python") if block.before.startswith(("From Python", "In Jupyter"))
]
REPORT_BLOCK = next(block for block in pages.every_block("bash") if "tuner report tuner_results/first" in block.text)


@pytest.mark.slow
def test_the_api_and_notebook_snippets_and_the_report_commands_run_as_written(own_ray, tmp_path, monkeypatch):
    """In a fresh folder, as a reader runs them: "From Python" runs an experiment, the notebook snippet
    loads it; the report block's first command runs the experiment its others report, in that order
    (the page's reading order); nothing lands outside ./tuner_results."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    for block in API_AND_NOTEBOOK:
        exec(compile(block.text, block.where, "exec"), {})
    assert (tmp_path / "tuner_results" / "from_python" / "trials.csv").is_file()
    lines = [shlex.split(line, comments=True) for line in REPORT_BLOCK.text.splitlines()]
    assert lines[0][:2] == ["tuner", "run"] and all(argv[:2] == ["tuner", "report"] for argv in lines[1:])
    reported = []
    for argv in lines:
        result = run_tuner(*argv[1:], cwd=tmp_path)
        assert result.returncode == 0, (argv, result.stderr[-3000:])
        reported.append(result.stdout)
    trials = pd.read_csv(tmp_path / "tuner_results" / "first" / "trials.csv")
    assert len(trials) == 9 and trials["trial_id"].iloc[0] in reported[1]
    assert (tmp_path / "tuner_results" / "first" / "report.html").is_file()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["tuner_results"]


def test_the_sample_output_has_the_shape_of_a_real_run():
    block = pages.sample_output()
    assert pages.output_shape_problems(block.text, elided=True) == []
    assert not re.search(r"\d+ lines", block.before)  # a line count would be one more number to drift


def _bench(name: str):
    sys.path.insert(0, str(REPO / "bench"))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(REPO / "bench"))


def _tables_after(command: str) -> list[list[list[str]]]:
    """The rows (header first) of each Markdown table between the docs' block holding `command` and the
    next command."""
    text = next(text for page in pages.PAGES if command in (text := page.read_text()))
    start = text.index(command)
    tables: list[list[list[str]]] = []
    previous = ""
    for line in text[start : text.index("```bash", start)].splitlines():
        if line.startswith("|") and not line.startswith(("|:", "|-", "| -")):
            if not previous.startswith("|"):
                tables.append([])
            tables[-1].append([cell.strip() for cell in line.strip("|").split("|")])
        previous = line
    return tables


SPREAD = re.compile(r"^\d\.\d{3} \((\d\.\d{3}|inf)-(\d\.\d{3}|inf)\)$|^inf \(")


def test_the_search_efficiency_tables_are_the_benchmarks_own_output():
    """Header and cell formats as the benchmark prints them: a table edited by hand (a range dropped, a
    column renamed) is not what the command beside it printed."""
    bench = _bench("search_efficiency")
    rows = [
        {"strategy": "s", "seed": seed, "trial_epochs": 9, "epochs_vs_grid": 1.0, "wall_s": 1.0}
        | {"best_val_acc": 0.9, "to_target_vs_grid": reach}
        for seed, reach in enumerate([0.2, 0.3, math.inf])
    ]
    printed = bench.summarize(pd.DataFrame(rows)).to_markdown(index=False).splitlines()[0]
    header = [cell.strip() for cell in printed.strip("|").split("|")]
    spreads = [header.index(name) for name in ("best val_acc", "vs grid", "epochs to target vs grid")]
    for command in ("python bench/search_efficiency.py\n", "python bench/search_efficiency.py --epochs 27"):
        tables = _tables_after(command)
        assert [table[0] for table in tables] == [header], command
        for row in tables[0][1:]:
            assert all(SPREAD.match(row[column]) for column in spreads), (command, row)
            assert re.fullmatch(r"\d+/\d+", row[header.index("reached")]), (command, row)


def test_a_seed_that_never_reaches_the_target_is_inf_not_nan():
    bench = _bench("search_efficiency")
    reached = pd.Series([0.245, 0.259, 0.3, math.inf, 0.2])
    assert bench.spread(reached) == "0.259 (0.245-0.300)"  # 25 % and 75 % fall on seeds: exact
    assert bench.spread(pd.Series([0.2, 0.3, math.inf])) == "0.300 (0.250-inf)"  # 75 %: half past the last seed
    assert bench.spread(pd.Series([0.2, 0.4])) == "0.300 (0.250-0.350)"  # linear, as pandas'


def test_every_test_the_fault_table_names_exists():
    """The fault table's last column names the test that proves each row: a renamed test leaves the row
    pointing at nothing."""
    text = "\n".join(page.read_text() for page in pages.PAGES)
    named = {name for row in text.splitlines() if row.startswith("| ") for name in re.findall(r"`(test_\w+)`", row)}
    defined = {
        found
        for path in (REPO / "tests").rglob("test_*.py")
        for found in re.findall(r"def (test_\w+)", path.read_text())
    }
    assert named and not named - defined, sorted(named - defined)
