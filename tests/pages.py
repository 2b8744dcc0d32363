"""README.md and the docs pages (docs/*.md) read as the tests need them: their fenced code blocks, and
the shape of what README's first command prints, checked the same way against README's sample and a
real run's output (tests/test_docs.py, tests/execution/test_console.py)."""

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = (README, *sorted(DOCS.glob("*.md")))  # README first: its first blocks are the two commands


@dataclass(frozen=True)
class Block:
    language: str
    text: str
    line: int  # the page's line of the opening fence, for messages
    before: str  # the paragraph above the block: what it says the block is
    page: Path

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(language: str | None = None, page: Path = README) -> list[Block]:
    lines = page.read_text().splitlines()
    found, index = [], 0
    while index < len(lines):
        opening = re.match(r"^```(\w*)\s*$", lines[index])
        if not opening:
            index += 1
            continue
        end = next(number for number in range(index + 1, len(lines)) if lines[number].startswith("```"))
        above = index - 1
        while above >= 0 and not lines[above].strip():
            above -= 1
        start = above
        while start > 0 and lines[start - 1].strip() and not lines[start - 1].startswith("```"):
            start -= 1
        text = "\n".join(lines[index + 1 : end]) + "\n"
        block = Block(opening.group(1), text, index + 1, " ".join(lines[start : above + 1]), page)
        if language is None or block.language == language:
            found.append(block)
        index = end + 1
    return found


def every_block(language: str | None = None) -> list[Block]:
    """The blocks of README and of every docs page, in that order."""
    return [block for page in PAGES for block in blocks(language, page)]


def sample_output() -> Block:
    """The block README says the first command prints."""
    return next(block for block in blocks("text") if block.before.startswith("What the first command print"))


TRIALS = 9  # the default space, search_spaces/digits_mlp.py: its grid
SMOKE = re.compile(r"^smoke step: one batch of the space's code on the first config ran in \d+ ms \(--no-smoke skips")
STATUS = re.compile(rf"^(\d+)/{TRIALS} trials done · ")
ENDED = re.compile(rf"^\[(\d+)/{TRIALS}\] (\S+) finished  best val_acc=\d\.\d+  batch_size=")
FINAL_BEST = re.compile(r" · best (\S+) val_acc=")
SUMMARY = ("experiment: ", "report: ", "best trial: ", "best config: ", "  as flags: ", "html report: ")


def output_shape_problems(output: str, elided: bool = False) -> list[str]:
    """What in the default experiment's output, as printed on a pipe, breaks the shape README shows: the
    smoke step's line first, status lines, a line per ended trial in order, a final status line naming
    the best trial, then the summary lines in order, whose best trial is the status line's. `elided`: a
    `...` line may stand for ended trials (README's sample). Lines other helpers may add (hints after
    the summary) are not judged."""
    lines = [line for line in output.splitlines() if line.strip()]
    problems = []
    if not lines or not SMOKE.match(lines[0]):
        problems.append(f"the first line is not the smoke step's: {lines[:1]}")
    ended = [int(match.group(1)) for line in lines if (match := ENDED.match(line))]
    expected = list(range(1, TRIALS + 1))
    if elided and "..." in lines:
        expected = [n for n in expected if n in ended]  # the elision stands for the rest, in order
        if ended != sorted(ended) or not ended or ended[-1] != TRIALS:
            problems.append(f"ended trials out of order or the last missing: {ended}")
    if ended != expected:
        problems.append(f"ended-trial lines [i/{TRIALS}] are {ended}, not {expected}")
    statuses = [line for line in lines if STATUS.match(line)]
    if not statuses or not statuses[-1].startswith(f"{TRIALS}/{TRIALS} trials done"):
        problems.append(f"no final status line '{TRIALS}/{TRIALS} trials done': {statuses[-1:]}")
    positions = [next((i for i, line in enumerate(lines) if line.startswith(prefix)), None) for prefix in SUMMARY]
    if None in positions or positions != sorted(positions):  # type: ignore[type-var]
        problems.append(f"summary lines {SUMMARY} missing or out of order: at {positions}")
    elif statuses and lines.index(statuses[-1]) > positions[0]:  # type: ignore[operator]
        problems.append("a status line after the summary")
    final = FINAL_BEST.search(statuses[-1]) if statuses else None
    summary_best = next((line.split()[2] for line in lines if line.startswith("best trial: ")), None)
    if final is None or final.group(1) != summary_best:
        problems.append(
            f"the final status line's best trial ({final and final.group(1)}) is not the summary's ({summary_best})"
        )
    return problems
