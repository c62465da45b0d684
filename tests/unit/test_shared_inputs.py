"""``adapters.shared_inputs``: a call's inputs laid out in a block two processes map, on the CPU
(torch's memory-mapped file stands for the device block CUDA IPC shares on a card)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections import namedtuple
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_zlbench.adapters.shared_inputs import ALIGN, KEEP, POOL_BYTES, SharedPool

torch = pytest.importorskip("torch")


def pool(tmp_path: Path, owner: bool = True) -> SharedPool:
    return SharedPool(tmp_path / "pool-r1-g0", owner)


def inside(p: SharedPool, t: Any) -> int:
    """``t``'s first byte as an offset into the block."""
    block = p.block(torch, torch.device("cpu"))
    offset = int(t.data_ptr() - block.data_ptr())
    assert 0 <= offset < POOL_BYTES
    return offset


def test_a_call_on_the_shared_copies_reads_what_it_read_on_its_own_inputs(tmp_path: Path) -> None:
    p = pool(tmp_path)
    x = torch.randn(8, 8)
    y = torch.randn(8, 8)
    placed = p.place(torch.add, (x, y), {"alpha": 2})
    assert placed is not None
    assert placed.storages == 2
    placed.load()  # the timer loads this side's values inside its turn
    assert torch.equal(placed.fn(), torch.add(x, y, alpha=2))


def test_nothing_is_copied_before_the_timer_loads(tmp_path: Path) -> None:
    """Outside a turn the other side may be replaying on the block: placing writes nothing."""
    p = pool(tmp_path)
    block = p.block(torch, torch.device("cpu"))
    block[:4096].fill_(7)
    placed = p.place(torch.neg, (torch.zeros(16),), {})
    assert placed is not None
    assert int(block[0]) == 7
    placed.load()
    assert torch.equal(placed.fn(), torch.zeros(16))


def test_views_aliases_and_strides_keep_their_relations(tmp_path: Path) -> None:
    p = pool(tmp_path)
    base = torch.arange(64, dtype=torch.float32)
    matrix = base.view(8, 8)
    seen: list[Any] = []

    def op(a: Any, b: Any, *, c: Any, lst: list[Any]) -> Any:
        seen[:] = [a, b, c, *lst]
        return a.sum() + b.sum() + c.sum() + sum(t.sum() for t in lst)

    placed = p.place(op, (matrix.t(), base[3:]), {"c": matrix, "lst": [base, torch.ones(5)]})
    assert placed is not None
    assert placed.storages == 2  # base and its views share one copy; the ones another
    placed.load()
    assert float(placed.fn()) == float(
        op(matrix.t(), base[3:], c=matrix, lst=[base, torch.ones(5)])
    )
    placed.fn()
    t, tail, c, whole, ones = seen
    assert t.stride() == (1, 8)
    assert not t.is_contiguous()
    assert inside(p, tail) - inside(p, whole) == 3 * 4  # base[3:] stays 3 elements in
    assert inside(p, c) == inside(p, whole) == inside(p, t)  # one copy of the storage
    assert torch.equal(ones, torch.ones(5))


def unaligned(nbytes: int, residue: int) -> Any:
    """A uint8 tensor whose storage starts ``residue`` bytes past a 64-byte boundary."""
    buffer = bytearray(nbytes + 64)
    base = torch.frombuffer(buffer, dtype=torch.uint8)
    skip = (residue - base.data_ptr()) % 64
    t = torch.frombuffer(buffer, dtype=torch.uint8, offset=skip, count=nbytes)
    t.keep = buffer  # type: ignore[attr-defined]
    assert t.untyped_storage().data_ptr() % KEEP == residue % KEEP
    return t


def offsets(p: SharedPool, tensors: tuple[Any, ...]) -> list[int]:
    block = p.block(torch, torch.device("cpu"))
    seen: list[Any] = []
    placed = p.place(lambda *ts: seen.extend(ts), tensors, {})
    assert placed is not None
    placed.fn()
    return [int(t.data_ptr() - block.data_ptr()) for t in seen]


def test_each_storage_keeps_its_address_modulo_16_and_both_sides_lay_it_out_alike(
    tmp_path: Path,
) -> None:
    """Triton specialises a kernel on its pointers' divisibility by 16: a copy at another
    address modulo 16 would compile another kernel for the timed graph. The slots depend on the
    sizes only: two sides whose storages sit at other addresses lay the call out alike."""
    p = pool(tmp_path)
    assert p.block(torch, torch.device("cpu")).data_ptr() % ALIGN == 0
    one = offsets(p, (unaligned(504, 0), unaligned(1000, 12), unaligned(7, 4)))
    other = offsets(p, (unaligned(504, 12), unaligned(1000, 0), unaligned(7, 8)))
    assert [at % KEEP for at in one] == [0, 12, 4]
    assert [at % KEEP for at in other] == [12, 0, 8]
    assert [at - at % KEEP for at in one] == [at - at % KEEP for at in other]
    assert [at // ALIGN for at in one] == [0, 2, 4]  # each slot: its bytes and 16 more, whole steps


def test_what_cannot_be_placed_is_timed_on_its_own_inputs(tmp_path: Path) -> None:
    p = pool(tmp_path)
    assert p.place(lambda: 1, (3, "x"), {}) is None  # no tensor
    assert p.place(torch.neg, (torch.randn(4).to_sparse(),), {}) is None  # not strided
    assert p.place(torch.neg, (torch.empty(POOL_BYTES // 4 + 1),), {}) is None
    assert p.unplaced == "inputs of more than 256 MiB"
    conj = torch.randn(3, dtype=torch.complex64).conj()
    assert p.place(torch.neg, (conj,), {}) is None  # set_ would drop the conjugate bit
    assert p.unplaced == "an input that is not a plain strided tensor"


def test_named_tuples_are_walked_and_one_tensor_twice_stays_one(tmp_path: Path) -> None:
    pair = namedtuple("pair", "x y")
    p = pool(tmp_path)
    x = torch.randn(4)
    seen: list[Any] = []
    placed = p.place(lambda a, b, c: seen.extend([a, b, c]), (pair(x, 2), x, x), {})
    assert placed is not None
    placed.fn()
    inner, again, third = seen
    assert isinstance(inner, pair)
    assert inner.y == 2
    assert again is third  # `a is b` in the op still holds
    assert inner.x.data_ptr() == again.data_ptr() != x.data_ptr()


def test_requires_grad_follows_the_input(tmp_path: Path) -> None:
    p = pool(tmp_path)
    w = torch.randn(4, requires_grad=True)
    seen: list[Any] = []
    placed = p.place(lambda a, b: seen.extend([a, b]), (w, torch.randn(4)), {})
    assert placed is not None
    placed.fn()
    assert [t.requires_grad for t in seen] == [True, False]


def test_another_process_maps_the_same_memory_once_both_agree(tmp_path: Path) -> None:
    """The block a side worker places into is the one the other side's worker maps; with the
    handshake of a card, the owner places nothing before the other side said it mapped it."""
    script = textwrap.dedent(
        f"""
        import time
        import torch
        from pathlib import Path
        from pytest_zlbench.adapters.shared_inputs import SharedPool
        root = Path({str(tmp_path)!r})
        p = SharedPool(root / "pool-r1-g0", owner=False, handshake=True)
        seen = []
        placed = p.place(lambda x: seen.append(x), (torch.zeros(4),), {{}})
        deadline = time.monotonic() + 60
        while not (root / "loaded").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        placed.fn()
        print(seen[0].tolist())
        seen[0].fill_(9.0)  # written into the memory both map
        """
    )
    other = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        owner = SharedPool(tmp_path / "pool-r1-g0", owner=True, wait_s=60, handshake=True)
        placed = owner.place(torch.neg, (torch.full((4,), 5.0),), {})
        assert placed is not None
        assert (tmp_path / "pool-r1-g0.decided").read_text() == "on"
        placed.load()
        (tmp_path / "loaded").touch()
        out, _ = other.communicate(timeout=60)
    finally:
        other.kill()
        other.wait()
    assert other.returncode == 0
    assert out.strip() == "[5.0, 5.0, 5.0, 5.0]"
    seen: list[Any] = []
    again = owner.place(lambda x: seen.append(x), (torch.zeros(4),), {})
    assert again is not None
    again.fn()
    assert seen[0].tolist() == [9.0] * 4


def test_a_block_the_other_side_never_publishes_leaves_the_calls_unshared(
    tmp_path: Path,
) -> None:
    """The side that maps the block waits for the other side's file a bounded time, then
    times on its own inputs and says why."""
    p = SharedPool(tmp_path / "pool-r1-g0", owner=False, wait_s=0.2)
    device = SimpleNamespace(type="cuda")
    assert p.block(torch, device) is None
    assert p.broken == "TimeoutError: the other side did not publish pool-r1-g0"
    assert p.block(torch, device) is None  # it does not wait again


def test_an_input_torch_cannot_view_elsewhere_leaves_the_call_on_its_own_inputs(
    tmp_path: Path,
) -> None:
    class Odd(torch.Tensor):
        def untyped_storage(self) -> Any:
            raise RuntimeError("no storage here")

    p = pool(tmp_path)
    assert p.place(torch.neg, (torch.randn(4).as_subclass(Odd),), {}) is None
    assert p.unplaced == "RuntimeError: no storage here"


def test_a_side_that_cannot_map_the_block_stops_the_other_from_sharing(tmp_path: Path) -> None:
    """Else the owner would time on the block and the other side on its own inputs: the very
    offset between the sides the option removes. The owner places nothing until it knows."""
    # on a card, the side that maps the block waits for the owner's file, which does not come
    mapper = SharedPool(tmp_path / "pool-r1-g0", owner=False, wait_s=0.0)
    assert mapper.block(torch, SimpleNamespace(type="cuda")) is None
    owner = SharedPool(tmp_path / "pool-r1-g0", owner=True, handshake=True)
    assert owner.place(torch.neg, (torch.randn(4),), {}) is None
    assert owner.broken == (
        "RuntimeError: the other side does not share: TimeoutError: the other side did not "
        "publish pool-r1-g0"
    )


def test_a_side_that_maps_the_block_too_late_does_not_share_either(tmp_path: Path) -> None:
    owner = SharedPool(tmp_path / "pool-r1-g0", owner=True, wait_s=0.1, handshake=True)
    assert owner.place(torch.neg, (torch.randn(4),), {}) is None
    assert owner.broken == (
        "RuntimeError: the other side does not share: the other side did not map the block "
        "within 0.1s"
    )
    late = SharedPool(tmp_path / "pool-r1-g0", owner=False, handshake=True)
    assert late.place(torch.neg, (torch.randn(4),), {}) is None
    assert late.broken is not None
    assert late.broken.startswith("RuntimeError: the other side does not share: ")


def test_the_side_that_maps_stops_waiting_once_the_owner_gave_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An owner that could not allocate the block says so; the other side does not wait out
    its time for a file that will not come."""
    (tmp_path / "pool-r1-g0.decided").write_text("off: OutOfMemoryError: no memory")

    def no_wait(seconds: float) -> None:
        raise AssertionError("it waited")

    import pytest_zlbench.adapters.shared_inputs as shared_inputs

    monkeypatch.setattr(shared_inputs.time, "sleep", no_wait)
    mapper = SharedPool(tmp_path / "pool-r1-g0", owner=False, wait_s=60)
    assert mapper.block(torch, SimpleNamespace(type="cuda")) is None
    assert mapper.broken == "RuntimeError: off: OutOfMemoryError: no memory"
