"""Where does the per-process offset of microsecond-sized graph timings come from? (issue 3)

Two processes measuring the same 1-2 us operator with the graph timer disagree by up to 7 %
while each run's own spread stays under 1 % (docs/PERFORMANCE.md). One process of this script
measures ``abs`` on a 64x64 fp16 tensor with pytest-zlbench's graph timer (30 replays of 10 ms),
after first allocating a pad of PAD_MB megabytes so that the input lands at another address, and
prints one JSON line: latency, spread, the input's address modulo 2 MiB, the pad. Run it in many
fresh processes (``for i in ...; do python offset_probe.py $PAD; done``): if the latency
follows the address or the pad, placement is the cause; if it varies with neither, look at the
graph or the card.

    python benchmarks/gpu/offset_probe.py [PAD_MB]
"""

from __future__ import annotations

import json
import sys

import torch

from pytest_zlbench.adapters.timers import DirectTimer, GraphTimer
from pytest_zlbench.adapters.torch_api import TorchDeviceAPI, triton_do_bench
from pytest_zlbench.core.backends import BackendRegistry


def main(argv: list[str]) -> int:
    pad_mb = int(argv[0]) if argv else 0
    pad = torch.empty(pad_mb * 2**20, dtype=torch.uint8, device="cuda") if pad_mb else None
    x = torch.randn(64, 64, dtype=torch.float16, device="cuda")
    api = TorchDeviceAPI(BackendRegistry().resolve("cuda"))
    do_bench = triton_do_bench()
    assert do_bench is not None
    timer = GraphTimer(api, DirectTimer(do_bench), budget_ms=10.0, replays=30)
    m = timer.measure(lambda: torch.abs(x))
    print(
        json.dumps(
            {
                "pad_mb": pad_mb,
                "latency_us": m.ms * 1000,
                "p20_us": m.spread.p20 * 1000,
                "p80_us": m.spread.p80 * 1000,
                "timer": m.timer,
                "addr_mod_2mib": x.data_ptr() % (2 << 20),
                "pad": pad is not None,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
