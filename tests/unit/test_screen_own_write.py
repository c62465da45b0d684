"""Which ``OSError`` of a screen is a file of its own the file system refused (a full disk):
that one stops the screen in one line; any other is a fault and stays one."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from pytest_zlbench.screen.engine import own_write_failed


def _error(code: int, filename: str | None) -> OSError:
    return OSError(code, os.strerror(code), filename)


def test_a_refused_write_under_the_root_is_the_screens_own() -> None:
    root = Path("/r/screen")
    for code in (errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EDQUOT, errno.EFBIG):
        assert own_write_failed(_error(code, "/r/screen/abs/ab.json"), root)


def test_any_other_oserror_is_not() -> None:
    root = Path("/r/screen")
    assert not own_write_failed(_error(errno.ENOSPC, "/elsewhere/ab.json"), root)
    assert not own_write_failed(_error(errno.ENOSPC, None), root)
    assert not own_write_failed(_error(errno.E2BIG, "/r/screen/abs/r1_A"), root)  # a spawn
    assert not own_write_failed(_error(errno.ENOENT, "/r/screen/abs/ab.json"), root)
