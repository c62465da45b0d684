"""zlbench.identity: ``--zl-out`` run recording, run identity, IR fingerprint, autotune pinning.

One run directory per session: ``run_identity.json``, ``rows.jsonl``, ``run.log``,
``summary.tsv``, ``ir.json``, the run's own ``triton_cache/`` and ``flaggems_cache/``, and
``.complete`` written last. Under xdist the controller owns the directory; workers' rows travel
to it on their test reports.
"""

from __future__ import annotations

import pytest

from .. import _common
from .._common import IdentitySpec, restore_env, run_recorder_key

OUT_HELP = "Write this session's run directory (identity, rows, log, summary, IR) to DIR"
REPLAY_HELP = (
    "Pin autotune configs from an earlier run directory (its flaggems_cache) instead of recording"
)
# the recording itself lives in pytest_zlbench._run, imported only when a run is recorded


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("zlbench-identity", "zlbench identity: run directories and IR")
    _common.add(parser, group, "--zl-out", OUT_HELP, metavar="DIR")
    _common.add(parser, group, "--zl-replay-from", REPLAY_HELP, metavar="DIR")


@pytest.hookimpl
def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(IdentitySpec)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    out = _common.raw(early_config, "zl_out")
    if out is None or _common.worker_index() is not None or _common.controller_mode(early_config):
        return  # workers inherit the controller's environment; an A/B root is no run directory
    from pathlib import Path

    from .._run import start_run
    from ..claim import RUN, claiming

    with claiming(early_config, RUN, Path(str(out))):  # the lock and kind of the run directory
        start_run(early_config, out)


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    recorder = config.stash.get(run_recorder_key, None)
    if recorder is not None:
        config.pluginmanager.register(recorder, "zlbench-run-recorder")
    elif _common.raw(config, "zl_out") is not None and not _common.controller_mode(config):
        # an xdist worker: attach rows to reports, write nothing
        from .._run import WorkerRows

        config.pluginmanager.register(WorkerRows(config), "zlbench-worker-rows")


@pytest.hookimpl
def pytest_unconfigure(config: pytest.Config) -> None:
    restore_env(config)
    if run_recorder_key in config.stash:
        del config.stash[run_recorder_key]
