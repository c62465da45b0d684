"""The work of ``zlbench.ab``: the A/B screen and ``--zl-compare``.

* ``settings``: the screen's settings, parsed once, and ``screen.json`` (what ``--zl-resume``
  checks);
* ``children``: one child pytest run per side and round, supervised (its own process group,
  timeout, one retry), and the options and environment it is given;
* ``controller``, ``collect``: the operator items, collected in the order of their batches,
  and the controller plugin that runs them and reports;
* ``batches``, ``sides``, ``side_process``, ``messages``: the side workers' batches
  (``--zl-screen-mode`` lockstep or sequential), driven round-major over socket pairs;
  ``worker``: the plugin a side worker is loaded with (``-p pytest_zlbench.screen.worker``);
* ``results``: one operator's directory read back and aggregated, ``ab.json``, ``notes.txt``
  and ``screen.tsv``;
* ``compare``: ``--zl-compare`` of two run directories, or re-aggregation of an A/B root.

Imported only when a screen or a compare is asked for, so an installed but inactive
``zlbench.ab`` costs no more than its option definitions.
"""

from __future__ import annotations
