"""What a CPU screen of many operators leaves on disk: files, megabytes, the report's size.

    python benchmarks/screen_footprint.py [--ops 300] [--shapes 1] [--rounds 1]
                                          [--mode lockstep] [--keep DIR] [--json OUT]

A generated suite of ``--ops`` operators (one test each, ``--shapes`` shapes each, a
pure-Python callable on the cpu backend) is screened once; the script prints the screen's wall
time, the files and megabytes under its root (all of them, and split into the operators'
folders, the side workers' ``.workers/`` and the rest), the files per operator, the size of
``report.html``, the operators' plots (how many, the largest in kB and the tallest in points)
and the largest resident set of the processes it waited for (the controller and its workers).
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from generated_suite import BUSY, FAST_TIMER_CONFTEST

CONFTEST = FAST_TIMER_CONFTEST

HEAD = "\nimport pytest\n\n" + BUSY

TEST = """

@pytest.mark.zl_op("op{k:04d}")
def test_op{k:04d}(zl_bench):
    for size in range({n}, {n} + {shapes}):
        zl_bench(lambda: busy(size), op="op{k:04d}", dtype="int", shape=f"[{{size}}]")
"""


def make_suite(folder: Path, ops: int, shapes: int = 1) -> None:
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "pytest.ini").write_text("[pytest]\n")
    per_file = 50
    for start in range(0, ops, per_file):
        last = min(ops, start + per_file)
        body = "".join(TEST.format(k=k, n=50 + k, shapes=shapes) for k in range(start, last))
        (folder / f"test_ops{start // per_file:03d}.py").write_text(HEAD + body)


def tally(paths: list[Path]) -> tuple[int, float]:
    files = [p for p in paths if p.is_file() and not p.is_symlink()]
    return len(files), sum(p.stat().st_size for p in files) / 1e6


def _height_pt(svg: Path) -> float:
    """The height an SVG declares (``height="123.4pt"``), in points."""
    found = re.search(r'height="([0-9.]+)pt"', svg.read_text(encoding="utf-8")[:2000])
    return float(found.group(1)) if found else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=300)
    parser.add_argument("--shapes", type=int, default=1, help="shapes per operator")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--mode", default="lockstep")
    parser.add_argument("--keep", type=Path, default=None, help="screen into DIR, kept")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="zl_footprint_") as tmp:
        folder = Path(tmp)
        make_suite(folder, args.ops, args.shapes)
        root = args.keep.resolve() if args.keep else folder / "screen"
        cmd = [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--zl-backend=cpu",
            "--zl-ab=OMP_NUM_THREADS=1", f"--zl-rounds={args.rounds}", f"--zl-out={root}",
            f"--zl-screen-mode={args.mode}",
        ]  # fmt: skip
        t0 = time.monotonic()
        done = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
        wall = time.monotonic() - t0
        if done.returncode != 0:
            print(done.stdout[-3000:], done.stderr[-3000:])
            print(f"the screen failed (exit status {done.returncode})")
            return 1
        everything = list(root.rglob("*"))
        op_dirs = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
        in_ops = [p for d in op_dirs for p in d.rglob("*")]
        workers = list((root / ".workers").rglob("*")) if (root / ".workers").is_dir() else []
        files, mb = tally(everything)
        op_files, op_mb = tally(in_ops)
        worker_files, worker_mb = tally(workers)
        report = root / "report.html"
        peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        plots = [p for d in op_dirs for p in d.glob("*.svg")]
        heights = [_height_pt(p) for p in plots]
        out = {
            "ops": args.ops,
            "shapes": args.shapes,
            "rounds": args.rounds,
            "mode": args.mode,
            "wall_s": round(wall, 1),
            "files": files,
            "mb": round(mb, 2),
            "operator_files": op_files,
            "operator_mb": round(op_mb, 2),
            "files_per_operator": round(op_files / max(1, len(op_dirs)), 1),
            "worker_files": worker_files,
            "worker_mb": round(worker_mb, 2),
            "other_files": files - op_files - worker_files,
            "report_mb": round(report.stat().st_size / 1e6, 2) if report.is_file() else None,
            "plots": len(plots),
            "largest_plot_kb": round(max((p.stat().st_size for p in plots), default=0) / 1e3, 1),
            "tallest_plot_pt": round(max(heights, default=0.0)),
            "peak_rss_mb": round(peak_mb, 1),
        }
        for key, value in out.items():
            print(f"{key:>20}: {value}")
        if args.json is not None:
            args.json.write_text(json.dumps(out, indent=2))
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
