"""Shared fixtures for the host's tests: the probe plugin, in-process and installed."""

from __future__ import annotations

from pathlib import Path

import probe_plugin
import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def _clear_probe_events() -> None:
    probe_plugin.EVENTS.clear()


@pytest.fixture
def probe() -> object:
    return probe_plugin


def _install_probe(site: Path) -> dict[str, str]:
    from hostd_testing import install_plugin_source, pythonpath_with

    folder = install_plugin_source(
        site,
        entry_point="probe",
        module="probe_plugin",
        source=(HERE / "probe_plugin.py").read_text(encoding="utf-8"),
    )
    return pythonpath_with(folder)


@pytest.fixture
def probe_install(tmp_path: Path) -> dict[str, str]:
    """The probe plugin installed by entry point (``probe``) for subprocesses: their env."""
    return _install_probe(tmp_path / "site")


@pytest.fixture(scope="module")
def module_probe_install(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """``probe_install`` for a server shared by a whole module's tests."""
    return _install_probe(tmp_path_factory.mktemp("probe") / "site")
