"""Clients on one data folder and store, through the in-memory host or a real ``hostd serve``.

The ``connect`` fixture (``hostd_testing.pytest_plugin``) runs a test twice, once per kind, so a
plugin's tool tests prove the same answers in-process and over stdio from a real process:

    async with connect() as client:                       # the suite's plugins and config
        ...
    async with connect(["deep-thinking", "tasks"], language="zh") as client:
        ...
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from mcp import Client

from hostd_testing.clients import in_memory_client, served_client, write_config

#: ``connect(plugins=None, *, config=None, language=None, settings=None, extra_plugins=None,
#: cwd=None, **client_options)`` opens a client.
Connect = Callable[..., AbstractAsyncContextManager[Client]]
#: The kinds of host ``connect`` runs a test against, in order (the test ids).
CONNECT_KINDS = ["in-memory", "served"]


def make_connect(
    kind: str,
    *,
    folder: Path,
    data_dir: Path,
    plugins: list[str] | None = None,
    config: Mapping[str, Any] | None = None,
) -> Connect:
    """Open clients on ``data_dir``; ``kind`` is 'in-memory' or 'served' (``hostd serve`` over
    stdio, its config written under ``folder``). ``plugins`` and ``config`` are the defaults
    every client starts from; a call's own ``config`` is merged over them."""
    if kind not in CONNECT_KINDS:
        raise ValueError(f"kind must be one of {CONNECT_KINDS}, not {kind!r}")
    served_configs = itertools.count()

    def open_client(
        names: list[str] | None = None,
        *,
        config: Mapping[str, Any] | None = None,
        language: str | None = None,
        settings: dict[str, Any] | None = None,
        extra_plugins: Mapping[str, object] | None = None,
        cwd: Path | None = None,
        **client_options: Any,
    ) -> AbstractAsyncContextManager[Client]:
        chosen = names if names is not None else plugins
        merged: dict[str, Any] = {**(base or {}), **(config or {})}
        if language is not None:
            merged["language"] = language
        if kind == "in-memory":
            return in_memory_client(
                chosen,
                data_dir=data_dir,
                config=merged,
                settings=settings,
                extra_plugins=extra_plugins,
                cwd=cwd,
                **client_options,
            )
        assert extra_plugins is None, "in-line plugins cannot cross into a subprocess"
        served = folder / f"served-{next(served_configs)}"
        served.mkdir(parents=True)
        merged.setdefault("data_dir", str(data_dir))
        path = write_config(served, chosen, config=merged, settings=settings)
        return served_client(path, cwd=cwd, **client_options)

    base = dict(config or {})
    return open_client


__all__ = ["CONNECT_KINDS", "Connect", "make_connect"]
