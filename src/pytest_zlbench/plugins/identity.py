"""zlbench.identity: ``--zl-out`` run recording, run identity, IR fingerprint, autotune pinning.

One run directory per session: ``run_identity.json``, ``rows.jsonl``, ``ir.json``,
``summary.tsv`` (not in a screen's side workers), ``run.log`` (where a test printed or failed),
the run's own ``triton_cache/`` and ``flaggems_cache/``, and ``.complete`` written last. Under
xdist the controller owns the directory; workers' rows travel to it on their test reports. The
recording lives in ``pytest_zlbench.recording``, imported only when a run is recorded.
"""

from __future__ import annotations

import pytest

from .. import _common
from .._common import IdentitySpec, restore_env, run_recorder_key


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("zlbench-identity", "zlbench identity: run directories and IR")
    _common.add_options(parser, group, "identity")  # core.options.OPTIONS


@pytest.hookimpl
def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(IdentitySpec)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    mode = _common.mode_of(early_config)
    if not mode.records or mode.out is None or _common.worker_index() is not None:
        return  # workers inherit the controller's environment; an A/B root is no run directory
    from pathlib import Path

    from ..claim import RUN, claiming
    from ..recording.run import start_run

    with claiming(early_config, RUN, Path(str(mode.out))):  # the run directory's lock and kind
        start_run(early_config, mode.out)


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    recorder = config.stash.get(run_recorder_key, None)
    if recorder is not None:
        config.pluginmanager.register(recorder, "zlbench-run-recorder")
    elif _common.mode_of(config).records:
        # an xdist worker: attach rows to reports, write nothing
        from ..recording.rows import WorkerRows

        config.pluginmanager.register(WorkerRows(config), "zlbench-worker-rows")
    if _common.raw(config, "zl_save") or _common.raw(config, "zl_compare_to"):
        from ..recording.saving import start_saving

        start_saving(config)


@pytest.hookimpl
def pytest_unconfigure(config: pytest.Config) -> None:
    restore_env(config)
    if run_recorder_key in config.stash:
        del config.stash[run_recorder_key]
