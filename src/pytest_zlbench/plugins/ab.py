"""zlbench.ab: ``--zl-ab``, ``--zl-rounds``, ``--zl-compare``: the A/B screen (SPEC §7, §8).

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
from .._common import DROP, RESET, ab_controller_key

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
TIMEOUT_HELP = (
    "Wall-clock limit in seconds for one side of one operator (a child run, or one operator in a "
    "side worker); its whole process group is killed"
)
RECORD_TIMEOUT_HELP = (
    "Wall-clock limit in seconds for one operator's recording pass, where autotuning runs "
    "(default: --zl-timeout)"
)
RESUME_HELP = (
    "In an existing --zl-out root, skip operators whose results are complete; with side "
    "workers an unfinished one goes on from the rounds it finished"
)
SHARD_HELP = (
    "Screen part K of N of the operators (the same split on every host); zlbench merge joins "
    "the parts"
)
SHARD_FROM_HELP = "Balance --zl-shard by the child run durations in an earlier screen root"
FAIL_BEYOND_HELP = (
    "CI gate: exit with status 6 when an operator is slower on side B by more than PCT percent "
    "(its median delta over the shapes beyond noise; a comparison of two runs: over every "
    "shape)"
)
COMPARE_TO_HELP = (
    "Compare against the stored run NAME (--zl-save): the run --zl-out records, or --zl-compare"
)
FLOOR_FROM_HELP = (
    "Judge the screen's shapes (or those of the A/B root --zl-compare re-aggregates) against the "
    "noise floor of this A/A control screen's root, of the same caliber, instead of the "
    "screen's own"
)
SCREEN_MODE_HELP = (
    "How the sides run: auto (default: one-process for a switch read when kernels compile, "
    "that is a variable of the installed Triton's cache-invalidating set, a FlagTree switch or "
    "one listed in ops/compile_switches.yaml, and for an A/A control; lockstep otherwise; the "
    "screen's header says which and why), lockstep (one worker process per side over all "
    "operators per round, timing in alternating turns), sequential (the same workers, one side "
    "after the other), one-process (one worker per round measuring both sides, each side's kernels "
    "compiled apart, for switches read when kernels compile or run), process (one process per "
    "side per operator and round)"
)
BATCH_SIZE_HELP = (
    "Side workers (lockstep, sequential, one-process): the most operators of one batch "
    "(default 50); each batch is measured and its operators marked complete before the next "
    "starts, so a screen cut short loses at most the passes of one batch to --zl-resume"
)

SHARED_INPUTS_HELP = (
    "Lockstep: both sides time each FlagGems call on its inputs copied into one block of device "
    "memory both side workers map, so that where the inputs sit cannot differ between the "
    "sides (graph and kernel timers, warm)"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("zlbench-ab", "zlbench A/B: screening compiler switches")
    add = _common.add
    # a child run of a screen measures one side: none of these reach it, and those that would
    # make it screen (or compare) again are reset in its ini too
    add(parser, group, "--zl-ab", AB_HELP, child=RESET, action="append", metavar="SWITCH")
    add(parser, group, "--zl-rounds", ROUNDS_HELP, child=RESET, metavar="N")
    add(parser, group, "--zl-allow-no-ir-diff", NO_IR_HELP, child=DROP, action="store_true")
    add(parser, group, "--zl-compare", COMPARE_HELP, child=RESET, action="append", metavar="PATH")
    add(
        parser, group, "--zl-allow-caliber-mismatch", MISMATCH_HELP, child=DROP, action="store_true"
    )
    add(parser, group, "--zl-timeout", TIMEOUT_HELP, child=DROP, metavar="SECONDS")
    add(parser, group, "--zl-record-timeout", RECORD_TIMEOUT_HELP, child=DROP, metavar="SECONDS")
    add(parser, group, "--zl-resume", RESUME_HELP, child=RESET, action="store_true")
    add(parser, group, "--zl-shard", SHARD_HELP, child=RESET, metavar="K/N")
    add(parser, group, "--zl-shard-from", SHARD_FROM_HELP, child=DROP, metavar="ROOT")
    add(parser, group, "--zl-compare-to", COMPARE_TO_HELP, child=RESET, metavar="NAME")
    add(
        parser,
        group,
        "--zl-screen-mode",
        SCREEN_MODE_HELP,
        child=DROP,
        metavar="auto|lockstep|sequential|one-process|process",
    )
    add(parser, group, "--zl-batch-size", BATCH_SIZE_HELP, child=DROP, metavar="N")
    add(parser, group, "--zl-shared-inputs", SHARED_INPUTS_HELP, child=DROP, action="store_true")
    add(parser, group, "--zl-fail-beyond", FAIL_BEYOND_HELP, child=DROP, metavar="PCT")
    add(parser, group, "--zl-floor-from", FLOOR_FROM_HELP, child=DROP, metavar="AA_ROOT")


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
