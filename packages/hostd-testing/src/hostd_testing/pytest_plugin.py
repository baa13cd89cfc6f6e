"""Fixtures hostd-testing adds to every pytest run where it is installed."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def hostd_data_dir(tmp_path: Path) -> Path:
    """A fresh data folder for one test's host."""
    path = tmp_path / "hostd-data"
    path.mkdir()
    return path


@pytest.fixture
def hostd_roots(tmp_path: Path) -> Path:
    """A fresh folder to use as the only allowed root."""
    path = tmp_path / "root"
    path.mkdir()
    return path


# PostgreSQL fixtures (a real server per test session, a fresh database per test).
from hostd_testing.postgres import postgres_server, postgres_url  # noqa: E402

__all__ = ["hostd_data_dir", "hostd_roots", "postgres_server", "postgres_url"]
