"""Compile kernels from a kernel file for sm_90 on a CPU-only host.

Usage: ``python triton_compile.py [--target=hip:gfx942:64] KERNEL_FILE NAME [NAME ...]``; the
default target is ``cuda:90:32`` (AMD targets compile on the CPU too, to ``.amdgcn``/``.hsaco``).
The caller sets ``TRITON_CACHE_DIR`` (and any compiler switch such as ``DISABLE_MMA_V3``) in this
process's environment: Triton reads them at compile time and caches compiled kernels in-process,
so every configuration gets its own process. Prints one JSON object: kernel name →
``metadata["hash"]``.

The signatures mimic what Triton 3.6's JIT specialisation would produce on a GPU (§10.2): pointers
and ints divisible by 16 carry ``tt.divisibility = 16``; strides equal to 1 become constexprs.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import triton
from triton.backends.compiler import GPUTarget

TARGET = GPUTarget("cuda", 90, 32)
DIV16 = [["tt.divisibility", 16]]

# name -> (signature, constexprs, indices of divisible-by-16 args, options)
SPECS: dict[str, tuple[dict[str, str], dict[str, Any], tuple[int, ...], dict[str, int]]] = {
    "add_kernel": (
        {"x_ptr": "*fp16", "y_ptr": "*fp16", "out_ptr": "*fp16", "n_elements": "i32"}
        | {"BLOCK": "constexpr"},
        {"BLOCK": 1024},
        (0, 1, 2, 3),
        {"num_warps": 4, "num_stages": 3},
    ),
    # the same kernel called with an n_elements not divisible by 16: another specialisation
    "add_kernel@odd_n": (
        {"x_ptr": "*fp16", "y_ptr": "*fp16", "out_ptr": "*fp16", "n_elements": "i32"}
        | {"BLOCK": "constexpr"},
        {"BLOCK": 1024},
        (0, 1, 2),
        {"num_warps": 4, "num_stages": 3},
    ),
    # a * b + c in fp32: FMA contraction happens below TTGIR (LLVM's NVPTX backend, ptxas)
    "fma_kernel": (
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32", "out_ptr": "*fp32"}
        | {"n_elements": "i32", "BLOCK": "constexpr"},
        {"BLOCK": 1024},
        (0, 1, 2, 3, 4),
        {"num_warps": 4, "num_stages": 3},
    ),
    "matmul_kernel": (
        {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
        | {"stride_am": "i32", "stride_ak": "constexpr", "stride_bk": "i32"}
        | {"stride_bn": "constexpr", "stride_cm": "i32", "stride_cn": "constexpr"}
        | {"BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "BLOCK_K": "constexpr"},
        {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1, "BLOCK_M": 128, "BLOCK_N": 128}
        | {"BLOCK_K": 64},
        (0, 1, 2, 3, 4, 5, 6, 8, 10),
        {"num_warps": 4, "num_stages": 3},
    ),
}


def load_module(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("zl_kernels", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    target = TARGET
    if argv and argv[0].startswith("--target="):
        backend, arch, warp = argv.pop(0).split("=", 1)[1].split(":")
        target = GPUTarget(backend, int(arch) if arch.isdigit() else arch, int(warp))
    module = load_module(str(Path(argv[0]).resolve()))
    hashes: dict[str, str] = {}
    for name in argv[1:]:
        signature, constexprs, divisible, options = SPECS[name]
        attrs = {(i,): DIV16 for i in divisible}
        kernel_fn = getattr(module, name.split("@", 1)[0])  # NAME@VARIANT: another specialisation
        src = triton.compiler.ASTSource(kernel_fn, signature, constexprs, attrs)
        kernel = triton.compile(src, target=target, options=options)
        hashes[name] = kernel.metadata.hash
    print(json.dumps(hashes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
