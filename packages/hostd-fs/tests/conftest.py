"""Fixtures shared by the hostd-fs tests: a sandbox root and a lock folder outside it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# Worker functions for child processes live in fs_test_workers; child processes started with
# "spawn" import it by name, whatever pytest's import mode.
_TESTS_DIR = str(Path(__file__).parent)
if _TESTS_DIR not in sys.path:
    sys.path.insert(0, _TESTS_DIR)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An allowed root, resolved, with room for siblings next to it."""
    folder = tmp_path / "root"
    folder.mkdir()
    return folder.resolve()


@pytest.fixture
def lock_dir(tmp_path: Path) -> Path:
    return tmp_path / "locks"
