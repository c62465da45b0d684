"""What the two fake FlagGems layouts (``tests/fake_suite/current`` and ``legacy``) share.

Each layout's ``pytest.ini`` puts ``tests/fake_suite/_core`` on ``pythonpath``; its ``benchmark/``
modules keep upstream's names and file layout of their era and import what is common from here:
:mod:`.consts` (enums, dataclasses, the stdout table), :mod:`.base` (the ``Benchmark`` class) and
:mod:`.hooks` (what both conftests do). See ``tests/fake_suite/README.md``.
"""
