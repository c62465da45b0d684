"""What registering one module as a pytest plugin costs, in instructions (callgrind).

Runs ``pytest --collect-only`` on a small generated suite with the zlbench entry points blocked,
then the same with ``-p MODULE`` added, for each MODULE given and for an empty reference module
(``zl_empty_mod``, ``X = 1``): the difference is what that module's import and registration add.

    python benchmarks/plugin_cost_instructions.py [MODULE ...]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from overhead import COMMON, DISABLE, write_suite
from overhead_instructions import instructions


def main(argv: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suite = root / "suite"
        suite.mkdir()
        write_suite(suite, 20)
        (root / "extra").mkdir()
        (root / "extra" / "zl_empty_mod.py").write_text("X = 1\n")
        env = dict(
            os.environ,
            PYTHONHASHSEED="0",
            PYTHONPYCACHEPREFIX=str(root / "pycache"),
            PYTHONPATH=str(root / "extra"),
        )
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        base = [sys.executable, "-m", "pytest", *COMMON, "--collect-only", "-q", *DISABLE]

        def count(cmd: list[str]) -> int:
            subprocess.run(cmd, cwd=suite, env=env, capture_output=True)  # warm bytecode
            return instructions(cmd, suite, env, Path(os.devnull))

        blocked = count(base)
        print(f"blocked: {blocked:,} instructions")
        for module in ["zl_empty_mod", *argv]:
            extra = count([*base, "-p", module]) - blocked
            print(f"-p {module}: +{extra / 1e6:.1f} M", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
