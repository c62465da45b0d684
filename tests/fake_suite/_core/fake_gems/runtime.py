"""Stand-in for ``flag_gems.runtime``: the device detector's public attributes (§9.1)."""

from __future__ import annotations

from types import SimpleNamespace

from . import vendor_name

device = SimpleNamespace(
    vendor_name=vendor_name,
    name=vendor_name,
    dispatch_key="CPU",
    device_count=1,
    support_fp64=True,
    support_bf16=True,
    support_int64=True,
)
backend_info = device
