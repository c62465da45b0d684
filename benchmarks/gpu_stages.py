"""The stages of the GPU validation, run by ``python benchmarks/gpu_validate.py run``.

Run from a FlagGems checkout (one whose pytest.ini puts src/ on the path; v5.3.4 is the one the
docs used) on a CUDA machine where pytest-zlbench is installed:

    cd FlagGems && python /path/to/pytest-zlbench/benchmarks/gpu_validate.py run [OPTIONS] STAGE...

Options:
  -o DIR       output folder (default ./zl_validate); every stage writes DIR/<stage>/ and is
               refused when that folder exists; the console is also in DIR/validate.log
  --seed DIR   a recorded run (or a folder holding flaggems_cache/config_cache/*.db) whose
               LibTuner configs every timing stage replays; default DIR/seed, recorded by the
               seed stage when it is missing
  --pack       at the end, DIR.tgz of everything but the Triton and FlagGems code caches

Stages, in the order given (all: every stage but scale, cards and sample); the cost on one H200
with FlagGems v5.3.4:
  env       cards, versions, the zlbench options pytest sees (always run first; seconds)
  seed      record the LibTuner seed: abs, mul, sum, fft, mm at --level core (~4.5 min)
  record    LibTuner record/replay (abs, mul, mm fp16) and plain triton.autotune record/replay
            (leaky_relu, smoke shapes): keys tuned, .ttgir files (~2 min)
  noise     two processes of abs, mul, sum, fft, mm at --level core, seed replayed, 30 replays
            x 10 ms, paired by timer_noise.py (~2 min)
  capnoise  a graph replay's time per call against its kernels' summed durations, capture to
            capture, five plain-torch rows, two processes (capture_noise.py; ~1 min)
  placement a microsecond kernel's duration against where its inputs sit: 8 placements, two
            processes, then 12 pages at offset 0 (placement_noise.py; ~4 min)
  oneproc   two graphs of one op in one process, on their own memory, shared inputs and one
            memory; then DISABLE_MMA_V3=1 compiled into side B of the same process
            (same_process_noise.py; ~10 min)
  timers    the same selection as noise, two processes per timer: graph, cold cache, direct,
            FlagGems' kernel mode and cudagraph mode; noise per timer and latency ratios (~9 min)
  caliber   abs and mul one caliber axis at a time: --level, the smoke shape file, FlagGems'
            kernel mode at warmup/rep 25/100 and 5/20, --zl-backend=cpu against cuda (~6 min)
  ab        DISABLE_MMA_V3=1 on AB_OPS (abs, mm) on one card, 4 rounds on mm, and with two
            cards -n 2 --zl-devices=0,1 and the card-to-card pairs (~6 min)
  aa        an A/A control: --zl-rounds=2 without --zl-ab on AB_OPS (~3 min)
  refuse    the timer of both latencies and the fewest samples of abs, nonzero, sum, mul, and
            the nodes a capture of nothing, a view and abs records (~2 min)
  aa3       the A/A control of the docs: --zl-rounds=3 over abs, mul, sum, fft, mm, for each
            mode of SCREEN_MODES (~3 min per mode with DTYPES=float16)
  mma       DISABLE_MMA_V3=1 on abs, mul, mm, 3 rounds: the gate (--zl-fail-beyond 5 and 100),
            aa3's floor when it ran (--zl-floor-from), the schema, report.html (~2 min)
  rlc       RLC_ENHANCE=1 (a FlagTree switch plain Triton ignores) on fft (~1 min)
  crash     a device-side assert in the middle of a screen's batch (gpu_suites/crash) (~1 min)
  cost      the screen's cost and precision on COST_OPS (30 test functions) with the smoke
            shapes and a seed of its own: DISABLE_MMA_V3=1 and an A/A control, 3 rounds each,
            per mode of SCREEN_MODES (~4 min per mode and screen); ends with one table
  scale     RLC_ENHANCE=1 over SCALE_OPS (default: the first SCALE_N=100 of the inventory's
            sample, sample_ops.py) with the smoke shapes, one card
  cards     one card against all: the scale screen's settings over the test functions of the
            file CARDS_OPS, first on card 0 alone, then -n <cards> --zl-devices=0,...
  capture   capture fallbacks, a capture that breaks cuSOLVER, ops/no_capture.yaml, cold cache,
            the random generator after a failed capture, a fatal device error (~5 min)
  xdist     card pinning with -n 2 (two cards), a fatal device error under -n 1 (~1 min)
  kill      recorded runs killed by SIGKILL (one process and -n 2) and stopped by SIGINT
            (~3 min)
  sample    --zl-inventory of the whole suite, then a stratified operator sample over every
            card (needs pytest-timeout)

Environment:
  DTYPES          restricts every stage to these dtypes (FlagGems' --dtypes), but for the tests
                  of OWN_DTYPES (default: fft, complex64 only), which screens measure apart
  SCREEN_MODES    the modes aa3 and cost run (lockstep), e.g. "lockstep one-process process"
  ZL_TIMER        the --zl-timer of every screen (aa3, mma, rlc, crash, cost, scale, cards)
  SHARED_INPUTS=1 adds --zl-shared-inputs to those screens (lockstep only)
  SCREEN_ARGS     more options for those screens, split on spaces
  RUN_TIMEOUT     bounds each recorded run and screen (900 s; SIGINT, then SIGKILL 30 s later)
  DEADLINE        seconds since the epoch that bound them all: each gets what is left, and one
                  with less than 20 s left is not started
  AB_OPS          the test functions of ab and aa
  COST_OPS, COST_SCREENS ("mma aa"), COST_SEED (a seed recorded before), COST_RESUME=1
                  (continue the screens an earlier run into the same -o left cut), PROCESS_OPS
                  (what process mode screens instead), MODE_CARDS (e.g. "lockstep=0
                  process=1,2": each mode at once on cards of its own, as nvidia-smi numbers
                  them, with CUDA_DEVICE_ORDER=PCI_BUS_ID)
  SCALE_OPS, SCALE_N, SCALE_BATCH (--zl-batch-size), SCALE_TIMEOUT (300), SCALE_RECORD_TIMEOUT
                  (900), SCALE_RESUME=1
  CARDS_OPS, CARDS_BATCH (100), CARDS_RUNS ("one all")
  KILL_AT (25), KILL_XDIST_AT (35), INT_AT (20): seconds before the kill stage's signals
  SAMPLE_SHARD (K/N), SAMPLE_SECONDS (480), SAMPLE_WORKERS (24), SAMPLE_WORKERS_RETRY (12),
  SAMPLE_TIMEOUT (420)
  PYTHON          the interpreter of every run (default: this one)
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

BENCH = Path(__file__).resolve().parent
STAGES = [
    *("env", "seed", "record", "noise", "capnoise", "placement", "oneproc", "timers", "caliber"),
    *("ab", "aa", "refuse", "aa3", "mma", "rlc", "crash", "cost", "scale", "cards", "capture"),
    *("xdist", "kill", "sample"),
]
ALL = [s for s in STAGES if s not in ("env", "scale", "cards", "sample")]


def fn(test: str) -> str:
    """FlagGems' test function ``NAME`` in ``benchmark/test_NAME.py``."""
    module, _, func = test.partition(":")
    return f"benchmark/test_{module}.py::{func or 'test_' + module}"


NOISE = [fn(t) for t in ("abs", "mul", "sum", "fft:test_perf_fft", "mm")]
CALIBER = [fn("abs"), fn("mul")]
COST_OPS = [
    fn(t)
    for t in (
        *("abs", "mul", "sum", "fft:test_perf_fft", "mm", "nonzero", "add", "addmm", "amax"),
        *("argmax", "bmm", "clamp", "cos", "cumsum", "div", "eq", "exp", "gelu", "isnan"),
        *("layer_norm", "log_softmax", "max", "mean", "mv", "neg", "relu", "rsqrt", "sigmoid"),
        *("softmax", "sin"),
    )
]
R30 = ["--zl-graph-replays=30", "--zl-graph-budget-ms=10"]
BASE = ["--level", "core", "-p", "no:cacheprovider", "-q", "-rfEs"]


def env_list(name: str, default: Sequence[str] = ()) -> list[str]:
    value = os.environ.get(name)
    return value.split() if value is not None else list(default)


class Tee:
    """A console that also goes to a file."""

    def __init__(self, stream: TextIO, path: Path) -> None:
        self.stream, self.file = stream, path.open("a")
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        with self.lock:
            self.stream.write(text)
            self.file.write(text)
            self.file.flush()
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


class Validation:
    """One call's stages: the output folder, the seed, the runs' environment and console."""

    def __init__(self, out: Path, seed: Path | None, console: TextIO) -> None:
        self.out, self.seed_dir, self.console = out, seed, console
        self.py = os.environ.get("PYTHON") or sys.executable
        self.extra_env: dict[str, str] = {}
        self.started = False
        dtypes = os.environ.get("DTYPES", "")
        self.dtypes = dtypes
        self.common = BASE + (["--dtypes", dtypes] if dtypes else [])
        self.own = env_list("OWN_DTYPES", [fn("fft:test_perf_fft")])
        self.screen_args = (
            [f"--zl-timer={os.environ['ZL_TIMER']}"] if os.environ.get("ZL_TIMER") else []
        )
        if os.environ.get("SHARED_INPUTS") == "1":
            self.screen_args.append("--zl-shared-inputs")
        self.screen_args += env_list("SCREEN_ARGS")
        self.modes = env_list("SCREEN_MODES") or ["lockstep"]
        self.smoke = self.python_line(
            "from pytest_zlbench.core.shapes import SHAPES_DIR; print(SHAPES_DIR / 'smoke.yaml')"
        )
        cards = self.python_line("import torch; print(torch.cuda.device_count())")
        self.cards = int(cards) if cards.isdigit() else 0
        smi = ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"]
        self.card_name = self.output(smi).partition("\n")[0] if shutil.which(smi[0]) else ""

        self.resume: list[str] = []
        self.cost_seed = ""
        self.cards_of: dict[str, str] = {}

    # -- the console and subprocesses ------------------------------------------------------

    def echo(self, *lines: str) -> None:
        for line in lines:
            self.console.write(line + "\n")

    def environ(self, **more: str) -> dict[str, str]:
        return {**os.environ, "PYTHONUNBUFFERED": "1", **self.extra_env, **more}

    def output(self, cmd: list[str], cwd: Path | None = None, **env: str) -> str:
        """What a command printed (stdout and stderr), or its failure to start."""
        try:
            done = subprocess.run(
                cmd, cwd=cwd, env=self.environ(**env), capture_output=True, text=True
            )
        except OSError as exc:
            return f"{cmd[0]}: {exc}"
        return (done.stdout + done.stderr).rstrip("\n")

    def python_line(self, code: str) -> str:
        lines = self.output([self.py, "-c", code]).splitlines()
        return lines[-1].strip() if lines else ""

    def show(self, cmd: list[str], cwd: Path | None = None, **env: str) -> str:
        text = self.output(cmd, cwd, **env)
        if text:
            self.echo(text)
        return text

    def summarise(self, *args: str) -> str:
        """A summary of ``gpu_validate.py`` (its own process: it reads what the runs wrote)."""
        return self.show([self.py, str(BENCH / "gpu_validate.py"), *args])

    def step(self, text: str) -> None:
        self.echo("", f"===== {text} ({time.strftime('%H:%M:%S', time.gmtime())} UTC)")

    def stage_dir(self, name: str) -> bool:
        """A fresh DIR/NAME, or the stage is refused."""
        if (self.out / name).exists():
            self.echo(f"stage {name}: {self.out / name} exists; choose another -o")
            return False
        (self.out / name).mkdir(parents=True)
        return True

    def limit(self, seconds: int | None = None) -> int | None:
        """The seconds a run may take: RUN_TIMEOUT (900), or what is left of DEADLINE when
        that is less; ``None`` when less than 20 s are left."""
        s = seconds or int(os.environ.get("RUN_TIMEOUT", "900"))
        deadline = os.environ.get("DEADLINE")
        if deadline:
            left = int(deadline) - int(time.time())
            if left < 20:
                self.echo("gpu_validate: DEADLINE reached, run not started")
                return None
            s = min(s, left)
        return s

    def limited(self, cmd: list[str], log: Path, seconds: int, cwd: Path | None = None) -> int:
        """Run ``cmd`` into ``log``; after ``seconds`` SIGINT, 30 s later SIGKILL (status 124,
        as coreutils' timeout)."""
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("w") as handle:
            proc = subprocess.Popen(
                cmd, cwd=cwd, env=self.environ(), stdout=handle, stderr=subprocess.STDOUT
            )
            try:
                return proc.wait(timeout=seconds)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                return 124

    def pytest(self, args: list[str]) -> list[str]:
        return [self.py, "-m", "pytest", *args]

    def zl(self, name: str, args: list[str], cwd: Path | None = None) -> int:
        """One recorded run into DIR/NAME, its console in DIR/NAME.log, limited by ``limit``;
        prints its exit status, wall time and last line."""
        t0 = time.time()
        seconds = self.limit()
        self.started = seconds is not None
        if seconds is None:
            self.echo(f"{name}: not started (DEADLINE)")
            return 124
        log = self.out / f"{name}.log"
        rc = self.limited(self.pytest([*args, f"--zl-out={self.out / name}"]), log, seconds, cwd)
        self.echo(f"{name}: rc={rc} {int(time.time() - t0)} s: {last_line(log)}")
        return rc

    def screen(self, name: str, args: list[str], cwd: Path | None = None) -> int:
        """One screen (``zl``), then its table, its gate and ``gpu_validate.py screen``."""
        t0 = time.time()
        rc = self.zl(name, [*args, *self.screen_args], cwd)
        if not self.started:
            return rc  # no summary of an earlier call's root
        text = read(self.out / f"{name}.log")
        self.echo(*table_lines(text))
        self.echo(*re.findall(r"^zlbench: (?:switch|--zl-fail-beyond).*$", text, re.M))
        self.summarise("screen", str(self.out / name), str(int(time.time() - t0)))
        return rc

    def seed(self) -> Path:
        """The seed folder; recorded first when missing."""
        if self.seed_dir:
            return self.seed_dir
        if not (self.out / "seed" / ".complete").is_file():
            self.stage_seed()
        return self.out / "seed"

    def own_split(self, tests: list[str]) -> tuple[list[str], list[str]]:
        """The tests measured under DTYPES, and those of OWN_DTYPES (screened apart)."""
        own = [t for t in tests if self.dtypes and t in self.own]
        return [t for t in tests if t not in own], own

    def noise(self, *args: str) -> None:
        self.show([self.py, str(BENCH / "timer_noise.py"), *args])

    def cards_env(self) -> str:
        return self.extra_env.get(
            "CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES", "")
        )

    # -- stages -------------------------------------------------------------------------------

    def stage_env(self) -> None:
        self.step("env")
        self.show(
            [
                "nvidia-smi",
                "--query-gpu=index,name,pci.bus_id,driver_version",
                "--format=csv,noheader",
            ]
        )
        self.show([self.py, "-c", VERSIONS])
        tag = self.output(["git", "describe", "--tags"]) or "not a git checkout"
        self.echo(f"FlagGems checkout: {Path.cwd()} ({tag.splitlines()[-1]})")
        options = self.output(self.pytest(["--help"])).count("--zl-")
        self.echo(f"zlbench options seen by pytest: {options}", f"smoke shapes: {self.smoke}")

    def stage_seed(self) -> None:
        self.step("seed: recording LibTuner configs (abs, mul, sum, fft, mm at core)")
        keep, _ = self.own_split(NOISE)
        if keep:
            self.zl("seed", keep + self.common)
        self.echo(*map(str, sorted((self.out / "seed").glob("flaggems_cache/config_cache/*.db"))))

    def stage_record(self) -> None:
        self.step("record: LibTuner record / replay, abs mul mm fp16")
        if not self.stage_dir("record"):
            return
        sel = [fn("abs"), fn("mul"), fn("mm")]
        fp16 = [*self.common, "--dtypes", "float16"]
        self.zl("record/rec", sel + fp16)
        self.zl("record/rep", sel + fp16 + [f"--zl-replay-from={self.out}/record/rec"])
        for d in ("rec", "rep"):
            self.summarise("tuning", str(self.out / "record" / d))
        self.step("record: plain triton.autotune record / replay, leaky_relu (smoke shapes)")
        lrelu = [fn("leaky_relu"), *self.common, f"--shape_file={self.smoke}"]
        self.zl("record/lrelu_rec", lrelu)
        self.zl("record/lrelu_rep", [*lrelu, f"--zl-replay-from={self.out}/record/lrelu_rec"])
        for d in ("lrelu_rec", "lrelu_rep"):
            self.summarise("tuning", str(self.out / "record" / d), "_leaky_relu_kernel")

    def stage_noise(self) -> None:
        self.step("noise: two processes, 30 replays x 10 ms")
        if not self.stage_dir("noise"):
            return
        seed = self.seed()
        for r in ("n1", "n2"):
            self.zl(f"noise/{r}", NOISE + self.common + [f"--zl-replay-from={seed}", *R30])
        self.noise(f"graph 30 x 10 ms={self.out}/noise/n1,{self.out}/noise/n2")
        for r in ("n1", "n2"):
            self.echo(*run_summary(read(self.out / "noise" / f"{r}.log")))

    def stage_capnoise(self) -> None:
        self.step("capnoise: replay time against kernel time, capture to capture, two processes")
        if not self.stage_dir("capnoise"):
            return
        for p in (1, 2):
            json_out = self.out / "capnoise" / f"process{p}.json"
            text = self.show([self.py, str(BENCH / "capture_noise.py"), "--json", str(json_out)])
            (self.out / "capnoise" / f"process{p}.txt").write_text(text + "\n")

    def flaggems_python(self, name: str, args: list[str]) -> None:
        """A script with this checkout's flag_gems importable (pytest gets src/ from
        pytest.ini), its console in ``name``.txt and its warnings left out."""
        path = os.pathsep.join(
            filter(None, [str(Path.cwd() / "src"), os.environ.get("PYTHONPATH")])
        )
        text = self.output([self.py, *args], PYTHONPATH=path)
        text = "\n".join(ln for ln in text.splitlines() if "warn" not in ln.lower())
        self.echo(text)
        (self.out / f"{name}.txt").write_text(text + "\n")

    def stage_placement(self) -> None:
        self.step("placement: a microsecond kernel's duration against where its inputs sit")
        if not self.stage_dir("placement"):
            return
        script, c = str(BENCH / "placement_noise.py"), self.out / "placement"
        for p in (1, 2):
            self.flaggems_python(
                f"placement/process{p}",
                [script, "--seed", str(p), "--json", f"{c}/process{p}.json"],
            )
        self.flaggems_python(
            "placement/pages",
            [script, "--pages", "--placements", "12", "--json", f"{c}/pages.json"],
        )

    def stage_oneproc(self) -> None:
        self.step("oneproc: two graphs of one op in one process, on their own and on one memory")
        if not self.stage_dir("oneproc"):
            return
        script, c = str(BENCH / "same_process_noise.py"), self.out / "oneproc"
        switch = ["--switch", "DISABLE_MMA_V3=1", "--rounds", "3"]
        self.flaggems_python("oneproc/ways", [script, "--json", f"{c}/ways.json"])
        self.flaggems_python("oneproc/switch", [script, *switch, "--json", f"{c}/switch.json"])
        for t in ("kernel", "replay"):
            self.flaggems_python(
                f"oneproc/switch_move_{t}",
                [script, *switch, "--move", "--timer", t, "--json", f"{c}/switch_move_{t}.json"],
            )

    def native(self, name: str, tests: list[str], timer: str, repeat: str, args: list[str]) -> None:
        """FlagGems' own timer (no zlbench option), the seed's configs copied into its own
        cache; its table is read from run.log through a hand-made identity."""
        d = self.out / name
        cache = d / "fg_cache" / "config_cache"
        cache.mkdir(parents=True)
        for db in (self.seed() / "flaggems_cache" / "config_cache").glob("*.db"):
            shutil.copy(db, cache)
        t0 = time.time()
        env = self.environ(
            FLAGGEMS_CACHE_DIR=str(d / "fg_cache"), TRITON_CACHE_DIR=str(d / "triton_cache")
        )
        with (d / "run.log").open("w") as log:
            rc = subprocess.call(
                self.pytest([*tests, *self.common, "-s", *args]),
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        rows = read(d / "run.log").count("SUCCESS")
        self.echo(f"{name}: rc={rc} {int(time.time() - t0)} s: {rows} rows")
        self.summarise("identity", str(d), timer, repeat, self.card_name)

    def stage_timers(self) -> None:
        self.step("timers: two processes per timer")
        if not self.stage_dir("timers"):
            return
        replay = [*NOISE, *self.common, f"--zl-replay-from={self.seed()}"]
        for r in (1, 2):
            self.zl(f"timers/graph{r}", replay)
            self.zl(f"timers/cold{r}", [*replay, "--zl-cold-cache"])
            self.zl(f"timers/direct{r}", [*replay, "--zl-timer=direct"])
            self.native(
                f"timers/fgk{r}",
                NOISE,
                "direct",
                "flaggems-kernel:warmup=25ms,rep=100ms",
                ["--mode", "kernel", "--warmup", "25", "--iter", "100"],
            )
            self.native(
                f"timers/fgg{r}",
                NOISE,
                "graph",
                "flaggems-cudagraph:rep=20ms",
                ["--mode", "cudagraph", "--iter", "20"],
            )
        t = self.out / "timers"
        self.noise(
            f"graph, defaults (10 x 20 ms)={t}/graph1,{t}/graph2",
            f"graph, cold cache={t}/cold1,{t}/cold2",
            f"direct (do_bench 25/100 ms)={t}/direct1,{t}/direct2",
            f"FlagGems kernel mode={t}/fgk1,{t}/fgk2",
            f"FlagGems cudagraph mode={t}/fgg1,{t}/fgg2",
        )
        self.noise(
            "--ratio",
            f"direct / graph={t}/graph1,{t}/direct1",
            f"cold / warm graph={t}/graph1,{t}/cold1",
            f"FlagGems cudagraph / our graph={t}/graph1,{t}/fgg1",
        )

    def stage_caliber(self) -> None:
        self.step("caliber: one axis at a time on abs and mul")
        if not self.stage_dir("caliber"):
            return
        c, seed = self.out / "caliber", self.seed()
        replay = [*CALIBER, *self.common, f"--zl-replay-from={seed}"]
        self.zl("caliber/core", replay + R30)
        self.zl("caliber/comprehensive", [*replay, "--level=comprehensive", *R30])
        self.zl("caliber/smoke", [*replay, f"--shape_file={self.smoke}", *R30])
        for r in ("w25a", "w5a", "w25b", "w5b"):
            warm, rep = ("25", "100") if r.startswith("w25") else ("5", "20")
            self.native(
                f"caliber/{r}",
                CALIBER,
                "direct",
                f"warmup={warm}ms,rep={rep}ms",
                ["--mode", "kernel", "--warmup", warm, "--iter", rep],
            )
        self.zl("caliber/backend_cuda", [*replay, "--zl-backend=cuda"])
        self.zl("caliber/backend_cpu", [*replay, "--zl-backend=cpu"])
        self.noise(
            f"level core vs comprehensive={c}/core,{c}/comprehensive",
            f"shapes upstream vs smoke={c}/core,{c}/smoke",
            f"kernel 25/100 vs 25/100={c}/w25a,{c}/w25b",
            f"kernel 5/20 vs 5/20={c}/w5a,{c}/w5b",
            f"kernel 25/100 vs 5/20 (a)={c}/w25a,{c}/w5a",
            f"kernel 25/100 vs 5/20 (b)={c}/w25b,{c}/w5b",
            f"backend cuda vs cpu={c}/backend_cuda,{c}/backend_cpu",
        )
        self.noise(
            "--ratio",
            f"kernel 5/20 / 25/100 (a)={c}/w25a,{c}/w5a",
            f"kernel 5/20 / 25/100 (b)={c}/w25b,{c}/w5b",
            f"cpu / cuda={c}/backend_cuda,{c}/backend_cpu",
        )

    def stage_ab(self) -> None:
        sel = env_list("AB_OPS", [fn("abs"), fn("mm")])
        self.step(f"ab: DISABLE_MMA_V3=1 on {' '.join(sel)}")
        if not self.stage_dir("ab"):
            return
        ab = [
            "--zl-ab=DISABLE_MMA_V3=1",
            f"--zl-replay-from={self.seed()}",
            "--zl-timeout=300",
            *self.common,
        ]
        one = copy.copy(self)
        one.extra_env = {**self.extra_env, "CUDA_VISIBLE_DEVICES": self.cards_env() or "0"}
        a = self.out / "ab"
        one.zl("ab/screen1", sel + ab)
        self.echo(*table_lines(read(a / "screen1.log")))
        one.zl("ab/mm4", [fn("mm"), *ab, "--zl-rounds=4"])
        self.echo(*table_lines(read(a / "mm4.log")))
        self.noise(f"mm side A, two processes on one card={a}/mm4/mm/r1_A,{a}/mm4/mm/r2_A")
        if self.cards < 2:
            self.echo("ab: one card; the two-card screen and the card-to-card pairs need two")
            return
        self.zl("ab/screen2", [*sel, *ab, "-n", "2", "--zl-devices=0,1"])
        self.echo(*table_lines(read(a / "screen2.log")))
        twos = sorted(a.glob("screen2/*/r1_A"))
        self.summarise(
            "devices",
            *map(str, sorted(a.glob("screen1/*/r1_A"))),
            *map(str, sorted(a.glob("screen2/*/r1_?"))),
        )
        self.noise(
            *(
                f"{d.parent.name} side A, screen1 vs screen2 (see the devices above)="
                f"{a}/screen1/{d.parent.name}/r1_A,{d}"
                for d in twos
            )
        )

    def stage_aa(self) -> None:
        self.step("aa: A/A control, --zl-rounds=2 without --zl-ab")
        if not self.stage_dir("aa"):
            return
        sel = env_list("AB_OPS", [fn("abs"), fn("mm")])
        self.zl(
            "aa/screen",
            [
                *sel,
                *self.common,
                "--zl-rounds=2",
                f"--zl-replay-from={self.seed()}",
                "--zl-timeout=300",
            ],
        )
        self.echo(*table_lines(read(self.out / "aa" / "screen.log")))

    def stage_refuse(self) -> None:
        self.step("refuse: the timer of both latencies, the fewest samples, what a capture records")
        if not self.stage_dir("refuse"):
            return
        files = [f"benchmark/test_{op}.py" for op in ("abs", "nonzero", "sum", "mul")]
        self.zl("refuse/run", files + self.common)
        run = str(self.out / "refuse" / "run")
        self.summarise("timers", run)
        rows = self.output([self.py, str(BENCH / "gpu_validate.py"), "rows", run])
        self.echo(*[ln for ln in rows.splitlines() if "direct" in ln.lower()][:12])
        self.summarise("nodes")

    def stage_aa3(self) -> None:
        self.step(f"aa3: A/A control, 3 rounds, modes {' '.join(self.modes)}")
        if not self.stage_dir("aa3"):
            return
        seed = self.seed()
        keep, own = self.own_split(NOISE)
        for mode in self.modes:
            aa = ["--zl-rounds=3", f"--zl-screen-mode={mode}", "--zl-timeout=300"]
            if keep:
                self.screen(f"aa3/{mode}", [*keep, *self.common, *aa, f"--zl-replay-from={seed}"])
            if own:
                self.screen(f"aa3/{mode}_own", [*own, *BASE, *aa])

    def stage_mma(self) -> None:
        self.step("mma: DISABLE_MMA_V3=1 on abs, mul, mm, 3 rounds, lockstep; the gate; the report")
        if not self.stage_dir("mma"):
            return
        floor_root = self.out / "aa3" / "lockstep"
        floor, report = [], []
        if (floor_root / "screen_result.json").is_file():
            floor, report = [f"--zl-floor-from={floor_root}"], ["--floor-from", str(floor_root)]
        rc = self.screen(
            "mma/screen",
            [
                fn("abs"),
                fn("mul"),
                fn("mm"),
                *self.common,
                "--zl-ab=DISABLE_MMA_V3=1",
                "--zl-rounds=3",
                f"--zl-replay-from={self.seed()}",
                "--zl-timeout=300",
                "--zl-fail-beyond=5",
                *floor,
            ],
        )
        self.echo(f"the screen with --zl-fail-beyond=5: exit status {rc} (6: the gate failed it)")
        root = self.out / "mma" / "screen"
        for pct in ("5", "100"):  # re-aggregated against the same floor as the screen
            cmd = [self.py, "-m", "pytest_zlbench.cli", "report", str(root), "--fail-beyond", pct]
            done = subprocess.run(
                [*cmd, *report], cwd="/tmp", env=self.environ(), capture_output=True, text=True
            )
            text = done.stdout + done.stderr
            (self.out / "mma" / f"report_{pct}.log").write_text(text)
            self.echo(
                f"zlbench report --fail-beyond {pct}: exit {done.returncode}",
                *re.findall(r"^.*(?:fail-beyond|wrote).*$", text, re.M),
            )
        self.show([self.py, "-c", SCHEMA_CHECK, str(root / "screen_result.json")])
        self.echo(
            *sorted(p.name for p in root.glob("*") if re.search("report.html|overview", p.name))
        )

    def stage_rlc(self) -> None:
        self.step("rlc: RLC_ENHANCE=1 on fft")
        if not self.stage_dir("rlc"):
            return
        self.screen(
            "rlc/fft",
            [
                fn("fft:test_perf_fft"),
                *self.common,
                "--zl-ab=RLC_ENHANCE=1",
                "--zl-rounds=3",
                f"--zl-replay-from={self.seed()}",
                "--zl-timeout=300",
            ],
        )

    def stage_crash(self) -> None:
        self.step("crash: a device-side assert in the middle of a screen's batch")
        if not self.stage_dir("crash"):
            return
        self.screen(
            "crash/screen",
            ["-p", "no:cacheprovider", "-q", "-rfE", "--zl-rounds=2", "--zl-timeout=120"],
            cwd=BENCH / "gpu_suites" / "crash",
        )
        log = read(self.out / "crash" / "screen.log")
        self.echo(*re.findall(r"^(?:FAILED|.*(?:fatal|died|alone|lost)).*$", log, re.M)[:12])

    # -- the cost stage -------------------------------------------------------------------------

    def stage_cost(self) -> None:
        screens = env_list("COST_SCREENS", ["mma", "aa"])
        cards = os.environ.get("MODE_CARDS", "")
        self.step(
            f"cost: {len(cost_ops())} test functions, smoke shapes, modes "
            f"{' '.join(self.modes)}, screens {' '.join(screens)}"
            + (f", cards {cards}" if cards else "")
        )
        if cards:
            mapping = self.mode_cards(cards)
            if mapping is None:
                return
            self.cards_of = mapping
        c = self.out / "cost"
        if os.environ.get("COST_RESUME") == "1" and c.is_dir():
            self.resume = ["--zl-resume"]  # the same operators and options
            if not (c / "seed" / ".complete").is_file():
                shutil.rmtree(c / "seed", ignore_errors=True)  # a cut seed is recorded again
        elif not self.stage_dir("cost"):
            return
        self.cost_seed = os.environ.get("COST_SEED") or str(c / "seed")
        keep, _ = self.own_split(cost_ops())
        if not os.environ.get("COST_SEED") and not (c / "seed").is_dir() and keep:
            self.zl("cost/seed", [*keep, *self.common, f"--shape_file={self.smoke}"])
        if not self.cards_of:
            for mode in self.modes:
                self.cost_mode(mode)
        else:  # each mode on its cards at once, its console kept apart until all have ended
            runs = []
            for mode in self.modes:
                # CUDA numbers the cards as nvidia-smi does only in PCI bus order
                env = {
                    "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
                    "CUDA_VISIBLE_DEVICES": self.cards_of[mode],
                }
                runs.append(self.apart(c / f"{mode}.console", env, self.cost_mode, mode))
            for run in runs:
                run.join()
            for mode in self.modes:
                self.echo("", f"----- {mode} on card(s) {self.cards_of[mode]}")
                self.echo(read(c / f"{mode}.console").rstrip("\n"))
        roots = []
        for mode in self.modes:
            for kind in screens:
                for name in (f"{kind}_{mode}", f"{kind}_{mode}_own"):
                    if not (c / name / "screen_result.json").is_file():
                        continue
                    on = c / f"{name}.cards"
                    label = f"{name} (cards {read(on).strip()})" if on.is_file() else name
                    roots.append(f"{c / name}={label}")
        if roots:
            self.echo("")
            self.summarise("table", *roots)

    def apart(
        self, console: Path, env: dict[str, str], work: Callable[..., None], *args: str
    ) -> threading.Thread:
        """``work(*args)`` at once with the caller, on a copy of this validation whose runs get
        ``env`` and whose console is the file ``console``."""
        other = copy.copy(self)
        other.extra_env = {**self.extra_env, **env}
        handle = console.open("w")
        other.console = handle

        def go() -> None:
            try:
                getattr(other, work.__name__)(*args)
            finally:
                handle.close()

        thread = threading.Thread(target=go)
        thread.start()
        return thread

    def mode_cards(self, text: str) -> dict[str, str] | None:
        """MODE_CARDS ("lockstep=0 process=1,2"): every mode of SCREEN_MODES given cards of its
        own, or the stage is refused."""
        mapping: dict[str, str] = {}
        seen: set[int] = set()
        for pair in text.split():
            mode, eq, cards = pair.partition("=")
            if not eq or not re.fullmatch(r"\d+(,\d+)*", cards):
                self.echo(f"cost: MODE_CARDS: '{pair}' is not MODE=CARD[,CARD...]")
                return None
            for card in map(int, cards.split(",")):
                if card in seen:
                    self.echo(
                        f"cost: MODE_CARDS: card {card} given twice (two screens on one "
                        "card time each other)"
                    )
                    return None
                if card >= self.cards:
                    self.echo(f"cost: MODE_CARDS: card {card}, but {self.cards} card(s) visible")
                    return None
                seen.add(card)
            mapping[mode] = cards
        for mode in self.modes:
            if mode not in mapping:
                self.echo(f"cost: MODE_CARDS gives no card to mode {mode}")
                return None
        return mapping

    def cost_mode(self, mode: str) -> None:
        """The cost stage's screens in MODE (PROCESS_OPS for process mode); with several cards
        of its own, those on their own dtypes on the last of them at the same time as the
        others on the rest."""
        sel = cost_ops()
        if mode == "process" and os.environ.get("PROCESS_OPS"):
            sel = env_list("PROCESS_OPS")
        keep, own = self.own_split(sel)
        cards = self.cards_of.get(mode, "")
        if "," not in cards or not keep or not own:
            self.cost_chain(mode, "both", cards)
            return
        rest, last = cards.rsplit(",", 1)
        console = self.out / "cost" / f"{mode}_own.console"
        thread = self.apart(
            console, {"CUDA_VISIBLE_DEVICES": last}, self.cost_chain, mode, "own", ""
        )
        keeper = copy.copy(self)
        keeper.extra_env = {**self.extra_env, "CUDA_VISIBLE_DEVICES": rest}
        keeper.cost_chain(mode, "keep", rest)
        thread.join()
        self.echo(read(console).rstrip("\n"))

    def cost_chain(self, mode: str, which: str, cards: str) -> None:
        """Each screen of COST_SCREENS in MODE over the tests measured under DTYPES (under
        xdist over CARDS when they are several), those on their own dtypes, or both."""
        c = self.out / "cost"
        sel = cost_ops()
        if mode == "process" and os.environ.get("PROCESS_OPS"):
            sel = env_list("PROCESS_OPS")
        keep, own = self.own_split(sel)
        k = cards.count(",") + 1
        par = ["-n", str(k), "--zl-devices=" + ",".join(map(str, range(k)))] if k >= 2 else []
        for kind in env_list("COST_SCREENS", ["mma", "aa"]):
            switch = ["--zl-ab=DISABLE_MMA_V3=1"] if kind == "mma" else []
            if self.cards_of:  # the cards each screen ran on, for the table
                if which != "own" and keep:
                    (c / f"{kind}_{mode}.cards").write_text(self.cards_env() + "\n")
                if which != "keep" and own:
                    (c / f"{kind}_{mode}_own.cards").write_text(
                        self.cards_env().split(",")[0] + "\n"
                    )
            else:  # on every card now: an earlier run's cards no longer name where it ran
                (c / f"{kind}_{mode}.cards").unlink(missing_ok=True)
                (c / f"{kind}_{mode}_own.cards").unlink(missing_ok=True)
            rounds = [*switch, "--zl-rounds=3", f"--zl-screen-mode={mode}"]
            if which != "own" and keep:
                self.cost_screen(
                    f"cost/{kind}_{mode}",
                    [
                        *keep,
                        *self.common,
                        f"--shape_file={self.smoke}",
                        *rounds,
                        f"--zl-replay-from={self.cost_seed}",
                        "--zl-timeout=300",
                        *par,
                    ],
                )
            if which != "keep" and own:
                self.cost_screen(
                    f"cost/{kind}_{mode}_own",
                    [
                        *own,
                        *BASE,
                        f"--shape_file={self.smoke}",
                        *rounds,
                        "--zl-timeout=300",
                    ],
                )

    def cost_screen(self, name: str, args: list[str]) -> None:
        """``screen``, continued with --zl-resume where COST_RESUME found its root (the earlier
        log kept beside it, with its end time in the name)."""
        if self.resume and (self.out / name).is_dir():
            log = self.out / f"{name}.log"
            if log.is_file():
                log.rename(self.out / f"{name}.{int(log.stat().st_mtime)}.log")
            self.screen(name, [*args, *self.resume])
        else:
            self.screen(name, args)

    # -- scale, cards, capture, xdist, kill, sample -------------------------------------------

    def stage_scale(self) -> None:
        self.step("scale: RLC_ENHANCE=1 over a sample of operators with the smoke shapes")
        c = self.out / "scale"
        resume = os.environ.get("SCALE_RESUME") == "1" and (c / "functions.txt").is_file()
        if not resume:
            if not self.stage_dir("scale"):
                return
            if os.environ.get("SCALE_OPS"):
                (c / "functions.txt").write_text("\n".join(env_list("SCALE_OPS")) + "\n")
            else:
                self.pick_sample(c, int(os.environ.get("SCALE_N", "100")))
        if not (c / "screen").is_dir():
            resume = False  # cut before its screen held anything: nothing to continue
        log = f"scale/screen_resumed_{int(time.time())}" if resume else "scale/screen"
        t0 = time.time()
        seconds = self.limit()
        if seconds is None:
            return
        batch = os.environ.get("SCALE_BATCH")
        args = [
            *read(c / "functions.txt").split(),
            *self.common,
            f"--shape_file={self.smoke}",
            "--zl-ab=RLC_ENHANCE=1",
            "--zl-rounds=3",
            f"--zl-timeout={os.environ.get('SCALE_TIMEOUT', '300')}",
            f"--zl-record-timeout={os.environ.get('SCALE_RECORD_TIMEOUT', '900')}",
            *([f"--zl-batch-size={batch}"] if batch else []),
            *(["--zl-resume"] if resume else []),
            *self.screen_args,
            f"--zl-out={c / 'screen'}",
        ]
        rc = self.limited(self.pytest(args), self.out / f"{log}.log", seconds)
        wall = int(time.time() - t0)
        self.echo(f"{log}: rc={rc} {wall} s: {last_line(self.out / f'{log}.log')}")
        self.summarise("screen", str(c / "screen"), str(wall))

    def pick_sample(self, folder: Path, count: int | None) -> list[str]:
        """The inventory of the whole suite, then the stratified sample's first ``count`` test
        functions into ``folder``/functions.txt."""
        inventory = folder / "inventory.tsv"
        text = self.output(
            self.pytest(
                ["benchmark", f"--zl-inventory={inventory}", "-p", "no:cacheprovider", "-q"]
            )
        )
        self.echo(*text.splitlines()[-3:])
        picked = self.output([self.py, str(BENCH / "sample_ops.py"), "pick", str(inventory)])
        functions = picked.splitlines()[:count] if count is not None else picked.splitlines()
        (folder / "functions.txt").write_text("".join(f + "\n" for f in functions))
        return functions

    def stage_cards(self) -> None:
        ops = os.environ.get("CARDS_OPS", "")
        self.step(
            f"cards: one card against {self.cards}, RLC_ENHANCE=1 over the functions of {ops}"
        )
        if not ops or not Path(ops).is_file():
            self.echo("cards: CARDS_OPS names no file of test functions")
            return
        c = self.out / "cards"
        c.mkdir(parents=True, exist_ok=True)
        for run in env_list("CARDS_RUNS", ["one", "all"]):
            if (c / run).exists():
                self.echo(f"cards: {c / run} exists; choose another -o")
                continue
            if run == "one":
                cards = ["--zl-devices=0"]
            elif run == "all":
                if self.cards < 2:
                    self.echo("cards: one card; -n needs two")
                    continue
                if not (c / "cache").is_dir():
                    self.echo("cards: no run on one card before: the cards split by test count")
                devices = ",".join(map(str, range(self.cards)))
                cards = ["-n", str(self.cards), f"--zl-devices={devices}"]
            else:
                self.echo(f"cards: unknown run '{run}' (one, all)")
                continue
            t0 = time.time()
            seconds = self.limit()
            if seconds is None:
                return
            # BASE but its -p no:cacheprovider: the split reads the cache the first run wrote
            args = [
                *read(Path(ops)).split(),
                "--level",
                "core",
                "-q",
                "-rfEs",
                "-o",
                f"cache_dir={c / 'cache'}",
                *(["--dtypes", self.dtypes] if self.dtypes else []),
                f"--shape_file={self.smoke}",
                "--zl-ab=RLC_ENHANCE=1",
                "--zl-rounds=3",
                f"--zl-timeout={os.environ.get('SCALE_TIMEOUT', '300')}",
                f"--zl-record-timeout={os.environ.get('SCALE_RECORD_TIMEOUT', '900')}",
                f"--zl-batch-size={os.environ.get('CARDS_BATCH', '100')}",
                *cards,
                *self.screen_args,
                f"--zl-out={c / run}",
            ]
            rc = self.limited(self.pytest(args), c / f"{run}.log", seconds)
            wall = int(time.time() - t0)
            self.echo(f"cards/{run}: rc={rc} {wall} s: {last_line(c / f'{run}.log')}")
            if rc == 0:  # a cut or failed run has no wall to compare
                (c / f"{run}.wall").write_text(f"{wall}\n")
            self.summarise("screen", str(c / run), str(wall))
        walls = [c / "one.wall", c / "all.wall"]
        if all(w.is_file() and read(w).strip() for w in walls):
            one, both = (int(read(w)) for w in walls)
            self.echo(
                f"cards: one card {one} s, {self.cards} cards {both} s: x{one / max(both, 1):.2f}"
            )

    def stage_capture(self) -> None:
        self.step(
            "capture: fallbacks, broken and killing captures, cold cache, generator, fatal error"
        )
        if not self.stage_dir("capture"):
            return
        smoke = f"--shape_file={self.smoke}"
        self.zl(
            "capture/fallback",
            ["benchmark/test_nonzero.py", "benchmark/test_unique.py", *self.common],
        )
        self.zl("capture/eigvals", [fn("linalg_eigvals"), *self.common, smoke])
        self.zl("capture/chol", [fn("cholesky_solve"), *self.common])
        self.zl("capture/chol_out", [fn("cholesky_solve:test_cholesky_solve_out"), *self.common])
        self.zl("capture/cold", [fn("abs"), *self.common, "--dtypes", "float16", "--zl-cold-cache"])
        self.zl(
            "capture/rng_fg",
            [
                fn("ctc_loss:test_ctc_loss_backward"),
                fn("embedding"),
                fn("glu"),
                *self.common,
                smoke,
            ],
        )
        suites = BENCH / "gpu_suites"
        self.zl("capture/rng", ["-p", "no:cacheprovider", "-q", "-rA"], cwd=suites / "rng")
        self.zl("capture/fatal", ["-p", "no:cacheprovider", "-q", "-rfE"], cwd=suites / "fatal")
        for name in ("rng", "fatal"):
            log = read(self.out / "capture" / f"{name}.log")
            self.echo(*re.findall(r"^(?:FAILED|PASSED|zlbench: the device).*$", log, re.M))
        c = self.out / "capture"
        names = ("fallback", "eigvals", "chol", "chol_out", "cold", "rng_fg", "rng", "fatal")
        self.summarise("rows", *(str(c / n) for n in names))

    def stage_xdist(self) -> None:
        self.step("xdist: card pinning, a fatal device error under -n 1")
        if not self.stage_dir("xdist"):
            return
        suites, x = BENCH / "gpu_suites", self.out / "xdist"
        if self.cards >= 2:
            self.zl(
                "xdist/pin",
                ["-n", "2", "--zl-devices=0,1", "-p", "no:cacheprovider", "-q", "-rA"],
                cwd=suites / "pinning",
            )
            seen = re.findall(r"CUDA_VISIBLE_DEVICES=\S*", read(x / "pin.log"))
            self.echo(*(f"{n:7d} {v}" for v, n in sorted(Counter(seen).items())[:4]))
            self.summarise("cards", str(x / "pin"))
        else:
            self.echo("xdist: one card; pinning needs two")
        self.zl(
            "xdist/fatal",
            ["-n", "1", "-p", "no:cacheprovider", "-q", "-rfE", f"--junitxml={x / 'fatal.xml'}"],
            cwd=suites / "fatal",
        )
        counts = re.findall(r'(?:tests|failures|errors)="\d+"', read(x / "fatal.xml"))
        self.echo(" ".join(counts[:3]))
        self.summarise("rows", str(x / "fatal"))

    def signalled(self, name: str, sig: signal.Signals, seconds: int, args: list[str]) -> None:
        """A recorded run of FlagGems tests in its own process group, signalled after
        ``seconds``; then what is left in its folder, its summary and what --zl-compare says."""
        k = self.out / "kill"
        run = k / name
        cmd = self.pytest(
            [*args, *self.common, f"--zl-replay-from={self.seed()}", f"--zl-out={run}"]
        )
        with (k / f"{name}.log").open("w") as log:
            proc = subprocess.Popen(
                cmd,
                env=self.environ(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            time.sleep(seconds)
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
            rc = proc.wait()
        files = " ".join(sorted(p.name for p in run.iterdir())) if run.is_dir() else ""
        self.echo(f"{name}: rc={rc} after SIG{sig.name[3:]} at {seconds} s; files: {files}")
        rows = self.output([self.py, str(BENCH / "gpu_validate.py"), "rows", str(run)])
        self.echo(rows.partition("\n")[0])
        text = read(k / f"{name}.log")
        tail = re.findall(r"^(?:zlbench:.*|.*(?:passed|failed|Interrupt).*)$", text, re.M)[-5:]
        self.echo(*(f"   log: {ln}" for ln in tail))
        done = subprocess.run(
            self.pytest(
                [
                    "--noconftest",
                    "-p",
                    "no:cacheprovider",
                    f"--zl-compare={run}",
                    f"--zl-compare={run}",
                    f"--zl-out={k / ('cmp_' + name)}",
                ]
            ),
            cwd="/tmp",
            env=self.environ(),
            capture_output=True,
            text=True,
        )
        text = done.stdout + done.stderr
        (k / f"cmp_{name}.log").write_text(text)
        error = next((ln for ln in text.splitlines() if "ERROR" in ln), "")
        self.echo(f"   --zl-compare: rc={done.returncode} {error}")

    def stage_kill(self) -> None:
        self.step("kill: SIGKILL and SIGINT to recorded runs")
        if not self.stage_dir("kill"):
            return
        two = [fn("abs"), fn("mul")]
        at = os.environ.get
        self.signalled("kill_one", signal.SIGKILL, int(at("KILL_AT", "25")), two)
        self.signalled(
            "kill_xdist",
            signal.SIGKILL,
            int(at("KILL_XDIST_AT", "35")),
            [*two, fn("sum"), "-n", "2"],
        )
        self.signalled("int_one", signal.SIGINT, int(at("INT_AT", "20")), two)

    def stage_sample(self) -> None:
        shard = os.environ.get("SAMPLE_SHARD", "1/1")
        self.step(f"sample: inventory, then the stratified operator sample (shard {shard})")
        if not self.stage_dir("sample"):
            return
        if "pytest_timeout" not in self.output(
            [self.py, "-c", "import pytest_timeout; print('pytest_timeout')"]
        ):
            self.echo("sample: needs pytest-timeout")
            return
        c = self.out / "sample"
        k, _, n = shard.partition("/")
        t0 = time.time()
        functions = self.pick_sample(c, None)[int(k) - 1 :: int(n)]
        (c / "functions.txt").write_text("".join(f + "\n" for f in functions))
        devices = ",".join(map(str, range(max(self.cards, 1))))
        opts = [
            *self.common,
            f"--shape_file={self.smoke}",
            f"--zl-devices={devices}",
            "--zl-graph-replays=3",
            "--zl-graph-budget-ms=2",
        ]
        self.echo(f"{len(functions)} test functions on cards {devices}")
        limit = int(os.environ.get("SAMPLE_SECONDS", "480"))
        timeout = f"--timeout={os.environ.get('SAMPLE_TIMEOUT', '420')}"

        def sample_pass(tests: list[str], workers: str, name: str) -> int:
            """One pass over ``tests``: its run directory, junit file and log are ``name``'s."""
            args = [*tests, *opts, "-n", workers, timeout, f"--junitxml={c / f'{name}.xml'}"]
            return self.limited(
                self.pytest([*args, f"--zl-out={c / name}"]), c / f"{name}.log", limit
            )

        rc = sample_pass(functions, os.environ.get("SAMPLE_WORKERS", "24"), "run")
        self.echo(f"sample: rc={rc} {int(time.time() - t0)} s: {last_line(c / 'run.log')}")
        sample_ops = [self.py, str(BENCH / "sample_ops.py")]
        failed = self.output([*sample_ops, "failed", str(c / "inventory.tsv"), str(c / "run.xml")])
        (c / "failed.txt").write_text(failed + "\n" if failed else "")
        runs, xmls = [str(c / "run")], [str(c / "run.xml")]
        if failed.split():  # a second pass: a failure there is the test's own
            rc = sample_pass(failed.split(), os.environ.get("SAMPLE_WORKERS_RETRY", "12"), "retry")
            self.echo(
                f"second pass over {len(failed.split())} functions: rc={rc} "
                f"{last_line(c / 'retry.log')}"
            )
            runs.append(str(c / "retry"))
            xmls.append(str(c / "retry.xml"))
        report = self.output(
            [*sample_ops, "report", str(c / "inventory.tsv"), "--runs", *runs, "--junit", *xmls]
        )
        (c / "report.tsv").write_text(report + "\n")
        self.echo(*[ln for ln in report.splitlines() if ln.startswith("#")])


VERSIONS = """import importlib.metadata, sys, torch, triton, pytest
print("python", sys.version.split()[0], "torch", torch.__version__, "triton", triton.__version__,
      "pytest", pytest.__version__, "cards", torch.cuda.device_count())
print("pytest-zlbench", importlib.metadata.version("pytest-zlbench"))
"""

SCHEMA_CHECK = """import json, sys
try:
    import jsonschema
except ImportError:
    sys.exit(print("schema check not run (needs jsonschema)"))
from importlib import resources
schemas = resources.files("pytest_zlbench.schemas")
schema = json.loads(schemas.joinpath("screen_result.schema.json").read_text())
jsonschema.validate(json.load(open(sys.argv[1])), schema)
print("screen_result.json: valid against its schema")
"""


def cost_ops() -> list[str]:
    return env_list("COST_OPS", COST_OPS)


def read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def last_line(path: Path) -> str:
    lines = read(path).rstrip("\n").splitlines()
    return lines[-1] if lines else ""


def table_lines(log: str) -> list[str]:
    """A screen's table in its console: from the line starting ``op  `` to the line that
    counts the tests."""
    lines = log.splitlines()
    start = next((i for i, ln in enumerate(lines) if ln.startswith("op  ")), None)
    if start is None:
        return []
    for end in range(start, len(lines)):
        if "passed" in lines[end] or "failed" in lines[end]:
            return lines[start : end + 1]
    return lines[start:]


def run_summary(log: str) -> list[str]:
    """The ``zlbench:`` lines of a run's summary."""
    at = log.find("zlbench run summary")
    return [ln for ln in log[at:].splitlines() if ln.startswith("zlbench:")] if at >= 0 else []


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="gpu_validate.py run",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-o", dest="out", default="zl_validate", help="output folder")
    parser.add_argument("--seed", help="a recorded run whose LibTuner configs are replayed")
    parser.add_argument("--pack", action="store_true", help="DIR.tgz at the end")
    parser.add_argument("stages", nargs="+", choices=[*STAGES, "all"], metavar="STAGE")
    args = parser.parse_args(argv)
    stages = [s for name in args.stages for s in (ALL if name == "all" else [name])]
    if not (Path("benchmark").is_dir() and Path("pytest.ini").is_file()):
        print(
            "gpu_validate: run from a FlagGems checkout (benchmark/ and pytest.ini here)",
            file=sys.stderr,
        )
        return 2
    seed = Path(args.seed).resolve() if args.seed else None
    if seed is not None and not seed.is_dir():
        print(f"gpu_validate: --seed: no such folder: {args.seed}", file=sys.stderr)
        return 2
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    console = Tee(sys.stdout, out / "validate.log")
    try:
        validation = Validation(out, seed, console)  # type: ignore[arg-type]
        validation.stage_env()
        for stage in stages:
            if stage != "env":
                getattr(validation, f"stage_{stage}")()
        if args.pack:
            with tarfile.open(f"{out}.tgz", "w:gz") as tar:
                tar.add(out, arcname=out.name, filter=_packed)
            validation.echo(f"packed: {out}.tgz")
    finally:
        console.file.close()
    return 0


def _packed(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """Leave out the Triton and FlagGems code caches."""
    parts = Path(info.name).parts
    cached = any(p in ("triton_cache", "code_cache", "fg_cache") for p in parts[:-1])
    return None if cached else info
