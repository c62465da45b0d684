"""zlbench.ab: ``--zl-ab``, ``--zl-rounds``, ``--zl-compare``: the A/B screen.

Each operator becomes one pytest item. In lockstep (``--zl-screen-mode=lockstep``, or ``auto``,
the default, for a switch read at import) the first item of a batch runs the whole batch
round-major through long-lived side workers, one process per side per round, timing in turns;
``one-process`` (``auto``'s choice for a switch read when kernels compile) one worker per round
measures both sides; ``process`` runs each side of each round as a child pytest process.
Either way each side of each round has its own run directory ``<root>/<op>/r<k>_<A|B>/``, after a
recording pass that pins autotune configs which every measured side replays. Under xdist the
operator items spread over workers, each pinned to a card; children inherit the pinning. The
work lives in ``pytest_zlbench.screen``, imported only when a screen or a compare is asked for.
"""

from __future__ import annotations

import pytest

from .. import _common
from .._common import ab_controller_key


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("zlbench-ab", "zlbench A/B: screening compiler switches")
    _common.add_options(parser, group, "ab")  # core.options.OPTIONS


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    if _common.mode_of(early_config).kind == _common.Mode.COMPARE:
        # --zl-compare reads run directories only: the wrapped suite's conftests (which may
        # import torch and initialise a device) are never imported
        early_config.known_args_namespace.noconftest = True


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    if _common.mode_of(config).kind != _common.Mode.COMPARE:
        return None
    from ..screen.compare import run_compare

    return run_compare(config)


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "zl_op(name): the operator id this test belongs to")
    if _common.mode_of(config).kind != _common.Mode.SCREEN:
        if _common.raw(config, "zl_shard") and not _common.is_worker(config):
            raise pytest.UsageError("--zl-shard splits an A/B screen: give --zl-ab or --zl-rounds")
        return
    from ..screen.controller import start_controller

    start_controller(config)


@pytest.hookimpl
def pytest_unconfigure(config: pytest.Config) -> None:
    if ab_controller_key in config.stash:
        del config.stash[ab_controller_key]
