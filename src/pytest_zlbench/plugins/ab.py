"""zlbench.ab: ``--zl-ab``, ``--zl-rounds``, ``--zl-compare``: the A/B screen (SPEC §7, §8).

Each operator becomes one pytest item. Running it runs each side of each round as a child pytest
process (own process group, own run directory ``<root>/<op>/r<k>_<A|B>/``, own caches), after a
recording pass that pins autotune configs which every measured side replays. Under xdist the
operator items spread over workers, each pinned to a card; children inherit the pinning.
"""

from __future__ import annotations

import pytest

from .. import _common
from .._common import ab_controller_key

AB_HELP = (
    "Screen a switch: NAME sets the backend's FlagTree switch FLAGTREE_[VENDOR_]NAME=1 on side B; "
    "VAR=VALUE sets exactly that variable. Repeatable"
)
ROUNDS_HELP = "Rounds per operator (default 1). Without --zl-ab: an A/A control of N rounds"
NO_IR_HELP = "Keep measuring operators whose IR did not change after round 1"
COMPARE_HELP = (
    "Twice: pair two existing run directories. Once: re-aggregate an A/B root. Runs no tests"
)
MISMATCH_HELP = "Compare despite caliber mismatches (every mismatch is still printed)"
TIMEOUT_HELP = "Wall-clock limit in seconds for one child run; its whole process group is killed"
RESUME_HELP = "In an existing --zl-out root, skip operators whose results are complete"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("zlbench-ab", "zlbench A/B: screening compiler switches")
    _common.add(parser, group, "--zl-ab", AB_HELP, action="append", metavar="SWITCH")
    _common.add(parser, group, "--zl-rounds", ROUNDS_HELP, metavar="N")
    _common.add(parser, group, "--zl-allow-no-ir-diff", NO_IR_HELP, action="store_true")
    _common.add(parser, group, "--zl-compare", COMPARE_HELP, action="append", metavar="PATH")
    _common.add(parser, group, "--zl-allow-caliber-mismatch", MISMATCH_HELP, action="store_true")
    _common.add(parser, group, "--zl-timeout", TIMEOUT_HELP, metavar="SECONDS")
    _common.add(parser, group, "--zl-resume", RESUME_HELP, action="store_true")


def _requested(config: pytest.Config) -> bool:
    return _common.raw(config, "zl_ab") is not None or _common.raw(config, "zl_rounds") is not None


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    if _common.raw(early_config, "zl_compare"):
        # --zl-compare reads run directories only: the wrapped suite's conftests (which may
        # import torch and initialise a device) are never imported
        early_config.known_args_namespace.noconftest = True


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    if not _common.raw(config, "zl_compare"):
        return None
    from .._ab import run_compare

    return run_compare(config)


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "zl_op(name): the operator id this test belongs to")
    if _common.raw(config, "zl_compare") or not _requested(config):
        return
    from .._ab import start_controller

    start_controller(config)


@pytest.hookimpl
def pytest_unconfigure(config: pytest.Config) -> None:
    if ab_controller_key in config.stash:
        del config.stash[ab_controller_key]
