"""Fake FlagGems benchmark suite, current layout (v5.3+): ``base.py``, ``consts.py``, one file
per operator. Runs on the CPU; see ``tests/fake_suite/README.md``."""
