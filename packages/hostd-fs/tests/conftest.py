"""Fixtures shared by the hostd-fs tests: a sandbox root and a lock folder outside it."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An allowed root, resolved, with room for siblings next to it."""
    folder = tmp_path / "root"
    folder.mkdir()
    return folder.resolve()


@pytest.fixture
def lock_dir(tmp_path: Path) -> Path:
    return tmp_path / "locks"
