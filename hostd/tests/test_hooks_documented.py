"""Meta-tests: every hook has a docstring, a section in the docs, and a test that uses it."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from hostd import hookspecs

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("hook", hookspecs.HOOK_NAMES)
def test_hook_has_a_docstring(hook: str) -> None:
    assert inspect.getdoc(getattr(hookspecs, hook)), f"{hook} needs a docstring"


@pytest.mark.parametrize("hook", hookspecs.HOOK_NAMES)
def test_hook_is_documented_in_the_readme(hook: str) -> None:
    assert f"`{hook}" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("hook", hookspecs.HOOK_NAMES)
def test_hook_is_exercised_by_a_test(hook: str) -> None:
    tests = Path(__file__).resolve().parent
    users = [
        path.name
        for path in tests.glob("*.py")
        if path.name != Path(__file__).name and hook in path.read_text(encoding="utf-8")
    ]
    assert users, f"no test module implements or calls {hook}"


def test_the_hook_list_is_complete() -> None:
    assert set(hookspecs.HOOK_NAMES) == {
        "hostd_settings_model",
        "hostd_register_tools",
        "hostd_register_services",
        "hostd_startup",
        "hostd_shutdown",
        "hostd_team_database",
        "hostd_copy_to_team_database",
    }
