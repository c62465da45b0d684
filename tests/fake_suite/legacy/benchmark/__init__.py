"""Fake FlagGems benchmark suite, legacy layout (v5.0.x): ``performance_utils.py``,
``attri_util.py`` and category test files. Runs on the CPU; see ``tests/fake_suite/README.md``."""
