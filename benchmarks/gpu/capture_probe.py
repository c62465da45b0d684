"""What does an aborted graph capture break, and does a fresh thread escape it? (issue 5)

On an H200, ``linalg_eigvals`` ran eagerly before our capture and failed eagerly after it was
aborted (``cusolverDnXgeev_bufferSize``: internal error), and ``cholesky_solve`` killed its
worker. torch keeps one cuSOLVER/cuBLAS handle per (thread, device); if the broken state lives
in the handle, a thread that never captured still works, and capturing on a side thread would
keep the main thread's handles clean.

One process runs one case and prints one JSON line:

    python benchmarks/gpu/capture_probe.py OP WHERE
    OP:    eigvals | chol_torch | chol_gems
    WHERE: main    (capture on the main thread, then an eager call on the main thread and one
                    on a fresh thread)
           thread  (warm up and capture on a side thread, then an eager call on the main one)

Run each case in its own process (a crash shows as the process's exit status).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from typing import Any

import torch


def _case(op: str) -> Callable[[], Any]:
    torch.manual_seed(0)
    if op == "eigvals":
        a = torch.randn(64, 64, device="cuda")
        return lambda: torch.linalg.eigvals(a)
    spd = torch.randn(64, 64, device="cuda", dtype=torch.float32)
    spd = spd @ spd.T + 64 * torch.eye(64, device="cuda")
    low = torch.linalg.cholesky(spd)
    rhs = torch.randn(64, 8, device="cuda")
    if op == "chol_torch":
        return lambda: torch.cholesky_solve(rhs, low)
    from flag_gems.ops.cholesky_solve import cholesky_solve

    return lambda: cholesky_solve(rhs, low)


def _try(fn: Callable[[], Any]) -> str:
    try:
        fn()
        torch.cuda.synchronize()
        return "ok"
    except Exception as exc:  # the probe reports whatever happens
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"


def _capture(fn: Callable[[], Any]) -> str:
    def body() -> None:
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                fn()
            graph.replay()
        finally:
            graph.reset()

    out = _try(body)
    capturing = torch.cuda.is_current_stream_capturing()
    return out + (" (still capturing)" if capturing else "")


def _on_thread(fn: Callable[[], str]) -> str:
    box: list[str] = []
    device = torch.cuda.current_device()

    def run() -> None:
        torch.cuda.set_device(device)
        box.append(fn())

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return box[0] if box else "thread died"


def main(argv: list[str]) -> int:
    op, where = argv
    fn = _case(op)
    out: dict[str, str] = {"op": op, "where": where, "warm": _try(fn)}
    if where == "main":
        out["capture"] = _capture(fn)
        out["eager_main_after"] = _try(fn)
        out["eager_fresh_thread_after"] = _on_thread(lambda: _try(fn))
    else:
        out["capture_on_thread"] = _on_thread(lambda: _try(fn) + " / " + _capture(fn))
        out["eager_main_after"] = _try(fn)
        out["capture_on_thread_again"] = _on_thread(lambda: _try(fn) + " / " + _capture(fn))
        out["eager_main_after_again"] = _try(fn)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
