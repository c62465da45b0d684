"""Which cases of FlagGems' cholesky_solve benchmark kill the process under our graph timer?

On an H200 the benchmark aborted (SIGABRT) inside ``torch.ops.aten.cholesky_solve`` while our
timer captured the torch baseline (``benchmark/base.py`` line 440), in 3 of 3 runs; timed with
``--zl-timer=direct`` it produced rows. This script measures the benchmark's cases one by one
with the graph timer, printing a line before each so that a crash names its case, and starts
again after the crashed case when run as

    python benchmarks/gpu/chol_probe.py drive SECONDS      # from FlagGems' root (.fg)

A single process (``python chol_probe.py FIRST``) measures from case FIRST on.
Output: one JSON line per case (``timer``, ``fallback``) and one per crash (``crashed``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time


def _cases() -> list[tuple[str, tuple[int, ...], bool]]:
    sys.path.insert(0, ".")
    from benchmark.test_cholesky_solve import CHOLESKY_SOLVE_CASES

    dtypes = ["float32", "float64", "complex64", "complex128"]
    return [(d, shape, upper) for d in dtypes for shape, upper in CHOLESKY_SOLVE_CASES]


def measure(first: int) -> None:
    import torch

    from pytest_zlbench.adapters.timers import DirectTimer, GraphTimer
    from pytest_zlbench.adapters.torch_api import TorchDeviceAPI, triton_do_bench
    from pytest_zlbench.core.backends import BackendRegistry

    api = TorchDeviceAPI(BackendRegistry().resolve("cuda"))
    do_bench = triton_do_bench()
    assert do_bench is not None
    timer = GraphTimer(api, DirectTimer(do_bench), budget_ms=2.0, replays=3)
    for i, (dtype_name, shape, upper) in enumerate(_cases()):
        if i < first:
            continue
        dtype = getattr(torch, dtype_name)
        *batch, n, nrhs = shape
        a = torch.randn(*batch, n, n, dtype=dtype, device="cuda")
        spd = a @ a.mH + 0.1 * torch.eye(n, dtype=dtype, device="cuda")
        low = torch.linalg.cholesky(spd)
        factor = low.mH.contiguous() if upper else low
        rhs = torch.randn(*batch, n, nrhs, dtype=dtype, device="cuda")
        case = {"i": i, "dtype": dtype_name, "shape": shape, "upper": upper}
        print(json.dumps({**case, "start": True}), flush=True)
        m = timer.measure(lambda: torch.ops.aten.cholesky_solve(rhs, factor, upper))  # noqa: B023
        print(json.dumps({**case, "timer": m.timer, "fallback": m.fallback}), flush=True)


def drive(seconds: float) -> None:
    end = time.time() + seconds
    first, total = 0, len(_cases())
    while first < total and time.time() < end:
        try:
            proc = subprocess.run(
                [sys.executable, __file__, str(first)],
                capture_output=True,
                text=True,
                timeout=max(1.0, end - time.time()),
                check=False,
            )
        except subprocess.TimeoutExpired:
            print(json.dumps({"i": first, "cut": "out of time"}), flush=True)
            return
        last = first
        for line in proc.stdout.splitlines():
            print(line, flush=True)
            if line.startswith("{"):
                last = json.loads(line)["i"]
        if proc.returncode == 0:
            break
        said = [x for x in proc.stderr.splitlines() if "terminate" in x or "what()" in x]
        tail = said[:4] or [x for x in proc.stderr.splitlines() if x.strip()][:3]
        print(json.dumps({"i": last, "crashed": proc.returncode, "stderr": tail}), flush=True)
        first = last + 1


if __name__ == "__main__":
    if sys.argv[1] == "drive":
        drive(float(sys.argv[2]))
    else:
        measure(int(sys.argv[1]))
