"""What the notes tests serve: the notes plugin, in English, on both stores (``backend``:
``[sqlite]`` and ``[postgres]``); hostd-testing's ``connect`` does the rest."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def hostd_plugins() -> list[str]:
    return ["notes"]


@pytest.fixture
def hostd_config(backend: dict[str, Any]) -> dict[str, Any]:
    return {"language": "en", **backend}
