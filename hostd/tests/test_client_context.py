"""What a tool gets from the client through the host: roots, progress, sampling."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from hostd_testing import envelope_of, in_memory_client, prompt_text, root_for

pytestmark = pytest.mark.anyio


def roots_callback(*paths: Path) -> Any:
    async def list_roots(context: Any) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[root_for(path) for path in paths])

    return list_roots


async def roots_seen(data_dir: Path, probe: object, **kwargs: Any) -> dict[str, Any]:
    async with in_memory_client(["probe"], data_dir=data_dir, extra_plugins={"probe": probe}, **kwargs) as c:
        return envelope_of(await c.call_tool("where", {}))


async def test_configured_roots_apply_when_the_client_declares_none(tmp_path: Path, probe: object) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    envelope = await roots_seen(tmp_path / "d", probe, config={"allowed_roots": [str(root)]})
    assert envelope["roots"] == [str(root.resolve())]


async def test_client_roots_apply_when_nothing_is_configured(tmp_path: Path, probe: object) -> None:
    client_root = tmp_path / "workspace"
    client_root.mkdir()
    envelope = await roots_seen(tmp_path / "d", probe, list_roots_callback=roots_callback(client_root))
    assert envelope["roots"] == [str(client_root.resolve())]


async def test_client_roots_narrow_configured_roots(tmp_path: Path, probe: object) -> None:
    configured, inner, elsewhere = tmp_path / "all", tmp_path / "all" / "project", tmp_path / "other"
    inner.mkdir(parents=True)
    elsewhere.mkdir()
    envelope = await roots_seen(
        tmp_path / "d",
        probe,
        config={"allowed_roots": [str(configured)]},
        list_roots_callback=roots_callback(inner, elsewhere),
    )
    assert envelope["roots"] == [str(inner.resolve())]


async def test_working_directory_is_the_root_when_nothing_else_is_given(
    tmp_path: Path, probe: object
) -> None:
    envelope = await roots_seen(tmp_path / "d", probe, cwd=tmp_path)
    assert envelope["roots"] == [str(tmp_path.resolve())]


@pytest.mark.parametrize("where", ["/", "home"])
async def test_slash_and_home_are_never_implicit_roots(tmp_path: Path, probe: object, where: str) -> None:
    cwd = Path("/") if where == "/" else Path.home()
    envelope = await roots_seen(tmp_path / "d", probe, cwd=cwd)
    assert envelope["error"]["code"] == "PATH_NOT_ALLOWED"
    assert envelope["error"]["details"]["reason"] == "NO_ROOT"
    assert "allowed_roots" in envelope["error"]["hint"]


async def test_progress_reaches_the_client(hostd_data_dir: Path, probe: object) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with in_memory_client(["probe"], data_dir=hostd_data_dir, extra_plugins={"probe": probe}) as c:
        result = await c.call_tool("count_slowly", {"steps": 4}, progress_callback=on_progress)
    assert envelope_of(result)["steps"] == 4
    assert seen == [(float(i), 4.0, f"step {i}") for i in range(1, 5)]


async def test_sampling_asks_the_clients_model(hostd_data_dir: Path, probe: object) -> None:
    prompts: list[str] = []

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        prompts.append(prompt_text(params))
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="forty-two"), model="test-model"
        )

    async with in_memory_client(
        ["probe"], data_dir=hostd_data_dir, extra_plugins={"probe": probe}, sampling_callback=sampling
    ) as c:
        envelope = envelope_of(await c.call_tool("ask", {"prompt": "meaning of life?"}))
    assert envelope["available"] is True
    assert envelope["text"] == "forty-two"
    assert prompts == ["meaning of life?"]


async def test_sampling_without_the_capability_says_not_available(
    hostd_data_dir: Path, probe: object
) -> None:
    async with in_memory_client(["probe"], data_dir=hostd_data_dir, extra_plugins={"probe": probe}) as c:
        result = await c.call_tool("ask", {"prompt": "anyone there?"})
    envelope = envelope_of(result)
    assert result.is_error is False
    assert envelope["available"] is False
    assert "sampling" in envelope["reason"]


async def test_a_client_refusing_sampling_is_reported_cleanly(hostd_data_dir: Path, probe: object) -> None:
    async def refuse(context: Any, params: Any) -> types.ErrorData:
        return types.ErrorData(code=-1, message="user declined")

    async with in_memory_client(
        ["probe"], data_dir=hostd_data_dir, extra_plugins={"probe": probe}, sampling_callback=refuse
    ) as c:
        envelope = envelope_of(await c.call_tool("ask", {"prompt": "?"}))
    assert envelope["available"] is False
    assert "declined" in envelope["reason"]
