"""zlbench.compat: per-backend skip overrides (SPEC §9) and ``--zl-inventory`` (SPEC §10).

**Overrides.** ``ops/compat/<backend>.yaml`` (package data; schema in ``ops/README.md``) pins
each override to one test file and one exact skip reason. They apply only when ``--zl-backend``
(or the ``zl_backend`` ini) names a backend whose ``compat`` tuple lists that file *and* the
``flag_gems`` module the suite imported reports that backend's vendor (``flag_gems.vendor_name
== backend.vendor``; looked up in ``sys.modules``, never imported here). They are applied in
``pytest_collection_modifyitems`` by a ``tryfirst`` *wrapper*: its first half runs before every
plain implementation, tryfirst ones included, so no other plugin or conftest sees the item list
before the lift.

Lifting removes the ``skipif`` marks whose reason equals the override's, wherever they sit on the
item's chain: the function's own marks (``item.own_markers``), its class's and its module's
(``pytestmark``). Module- and class-level marks live once on the ``Module``/``Class`` node, so
removing one there lifts it for every test of that module; that is what an override pinned to a
file means. pytest evaluates skip marks at setup from ``item.iter_markers``, so the removal is
all it takes. ``item.keywords`` still names ``skipif`` (pytest offers no way to drop a keyword);
only ``-k skipif`` could notice.

The collection report says how many skips were lifted and lists every *stale* override: its file
is absent from the benchmark directory, or no skip guard in that file carries its reason any
more (checked on the collected marks, or statically with ``ast`` for files not collected).
Under xdist the workers collect: the lifted count reaches the controller on the test reports and
stale overrides arrive as ``ZlbenchCompatWarning`` (``pytest_zlbench.compat.session``).

**Inventory.** ``--zl-inventory PATH`` writes one TSV row per collected test (op id, file, node
id, Benchmark class, reasons of the skip marks whose condition is true, after any lift) and then
deselects every test, like FlagGems' own ``--collect-marks``: regenerating the inventory of a
suite on a GPU host must not start hours of benchmarks. It lives here rather than in a plugin of
its own because it reads the same skip marks and the same benchmark-directory layout, and SPEC §3
has no sixth entry point. The work lives in ``pytest_zlbench.compat``, imported only when there
is some to do.
"""

from __future__ import annotations

import pytest

from .. import _common

#: the name ``pytest_zlbench.compat.session.CompatSession`` is registered under
SESSION_NAME = "zlbench-compat-session"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup(
        "zlbench-compat", "zlbench compat: per-backend skip overrides and the test inventory"
    )
    _common.add_options(parser, group, "compat")  # core.options.OPTIONS


@pytest.hookimpl
def pytest_configure(config: pytest.Config) -> None:
    backend_given = _common.raw(config, "zl_backend") is not None
    inventory_raw = _common.raw(config, "zl_inventory")
    if not backend_given and inventory_raw is None:
        return
    from ..compat.session import session_for

    session = session_for(config, backend_given, inventory_raw)
    if session is not None:
        config.pluginmanager.register(session, SESSION_NAME)


@pytest.hookimpl
def pytest_unconfigure(config: pytest.Config) -> None:
    session = config.pluginmanager.get_plugin(SESSION_NAME)
    if session is not None:
        config.pluginmanager.unregister(session, SESSION_NAME)
