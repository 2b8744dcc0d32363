"""Write an experiment's report.html and photograph it with headless Chromium, to look at the page as a
reader sees it.

    python bench/screenshot_report.py tuner_results/digits_mlp-20261202-120000 [--out /tmp/shots]

It needs Chromium on the PATH (Debian: `apt-get install chromium`) and Pillow (`pip install -e '.[bench]'`).

Chromium photographs one window, so the window is made taller than any report and the picture is then
trimmed of the blank space below the page and cut into screen-sized tiles, which an image viewer shows
at full resolution: `<out>/<experiment name>-1.png`, `-2.png`, ... `--out` defaults to the
experiment's own `screenshots/` folder, beside the report.html it photographs, never the current folder.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image, ImageChops

from tuner.results import html_report, report

CHROMIUMS = ("chromium", "chromium-browser", "google-chrome")  # Debian's, Ubuntu's, Google's
WIDTH = 1400
TILE_HEIGHT = 1600


def chromium() -> str:
    found = next((path for name in CHROMIUMS if (path := shutil.which(name))), None)
    if found is None:
        sys.exit(f"no Chromium on the PATH ({', '.join(CHROMIUMS)}); install it, e.g. apt-get install chromium")
    return found


def screenshot(page: Path, out: Path, height: int) -> None:
    subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--window-size={WIDTH},{height}",
            f"--screenshot={out}",
            page.resolve().as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )


def trimmed(image: Image.Image) -> Image.Image:
    """The image down to the last row that is not page background."""
    background = Image.new(image.mode, image.size, image.getpixel((image.width - 1, image.height - 1)))
    box = ImageChops.difference(image, background).getbbox()
    return image.crop((0, 0, image.width, min(box[3] + 20, image.height))) if box else image


def tiles(image: Image.Image, out_dir: Path, stem: str) -> list[Path]:
    paths = []
    for number, top in enumerate(range(0, image.height, TILE_HEIGHT), start=1):
        path = out_dir / f"{stem}-{number}.png"
        image.crop((0, top, image.width, min(top + TILE_HEIGHT, image.height))).save(path)
        paths.append(path)
    return paths


def out_folder(experiment: str, out: str | None) -> Path:
    """Where the tiles go: `--out` if given, else `<experiment>/screenshots` (the current folder is often
    a checkout, where PNGs would sit untracked)."""
    return Path(out) if out is not None else Path(experiment) / "screenshots"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment", help="an experiment directory that `tuner run` printed")
    parser.add_argument("--out", default=None, help="folder for the PNG tiles (default: <experiment>/screenshots)")
    parser.add_argument("--height", type=int, default=12000, help="window height; more than the page's")
    args = parser.parse_args()

    trials, history = report.read_tables(args.experiment)
    page = Path(html_report.write(args.experiment, trials, history, report.load_meta(args.experiment)))
    out_dir = out_folder(args.experiment, args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        full = Path(scratch) / "full.png"
        screenshot(page, full, args.height)
        with Image.open(full) as image:
            picture = trimmed(image.convert("RGB"))
    if picture.height >= args.height:  # the page went on below the window
        print(f"the page is taller than {args.height}px; rerun with a larger --height", file=sys.stderr)
    for path in tiles(picture, out_dir, Path(args.experiment.rstrip("/")).name):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
