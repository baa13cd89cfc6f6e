"""Where update_summary may write: inside the effective roots only, by any spelling.

Effective roots are the configured ``allowed_roots`` narrowed by the client's roots (the SDK
client's ``list_roots`` callback), else the working folder, never ``/`` or the home folder.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from hostd_testing import Connect, root_for
from summary_writer_support import host_config, update

pytestmark = pytest.mark.anyio


def roots_callback(*folders: Path) -> Any:
    """An SDK ``list_roots_callback`` declaring ``folders`` as the client's roots."""

    async def list_roots(context: Any) -> mcp_types.ListRootsResult:
        return mcp_types.ListRootsResult(roots=[root_for(folder) for folder in folders])

    return list_roots


def tree(folder: Path) -> list[str]:
    """Every path under ``folder``, relative, so a test can see nothing was created."""
    return sorted(str(path.relative_to(folder)) for path in folder.rglob("*"))


@pytest.fixture
def sandbox(tmp_path: Path) -> dict[str, Path]:
    """A root, a folder outside it, siblings named like it, and symlinks that point out."""
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    for folder in (root, outside, tmp_path / "root-evil", tmp_path / "rootx"):
        folder.mkdir()
    (outside / "target.md").write_text("outside, untouched")
    (root / "link-out").symlink_to(outside, target_is_directory=True)
    (root / "file-link.md").symlink_to(outside / "target.md")
    (root / "dangling.md").symlink_to(outside / "missing.md")
    return {"root": root, "outside": outside, "base": tmp_path}


def hostile_paths(sandbox: dict[str, Path]) -> list[str]:
    """Paths that leave the root: traversal by every spelling, absolute, siblings, symlinks."""
    root, outside, base = sandbox["root"], sandbox["outside"], sandbox["base"]
    return [
        "../outside/x.md",
        "../../x.md",
        "notes/../../outside/x.md",
        "..\\outside\\x.md",
        "notes\\..\\..\\x.md",
        "%2e%2e/outside/x.md",
        "%2E%2E%2Foutside%2Fx.md",
        "..%2foutside%2fx.md",
        "..%5coutside%5cx.md",
        str(outside / "x.md"),
        str(outside / "target.md"),
        f"{root}/../outside/x.md",
        "/etc/hostd-summary-test.md",
        str(base / "root-evil" / "x.md"),
        str(base / "rootx" / "x.md"),
        f"{root}-evil/x.md",
        "link-out/x.md",
        "link-out/target.md",
        "file-link.md",
        "dangling.md",
        str(root / "link-out" / "new" / "x.md"),
    ]


@pytest.mark.served
async def test_hostile_paths_are_refused_and_create_nothing(
    connect: Connect, sandbox: dict[str, Path]
) -> None:
    root, outside = sandbox["root"], sandbox["outside"]
    before_root, before_outside = tree(root), tree(outside)
    paths = hostile_paths(sandbox)
    async with connect(config=host_config([root])) as client:
        envelopes = [await update(client, content="attack", file_path=path) for path in paths]
        overwrites = [
            await update(client, content="attack", file_path=path, mode="overwrite") for path in paths
        ]
    for path, envelope in zip(paths * 2, envelopes + overwrites, strict=True):
        assert envelope["status"] == "error", path
        assert envelope["error"]["code"] == "PATH_NOT_ALLOWED", (path, envelope["error"])
        assert envelope["error"]["hint"], path
    assert tree(root) == before_root
    assert tree(outside) == before_outside
    assert (outside / "target.md").read_text() == "outside, untouched"
    assert not (sandbox["base"] / "root-evil" / "x.md").exists()
    assert not Path("/etc/hostd-summary-test.md").exists()


async def test_hostd_fs_hostile_corpus_is_refused(connect: Connect, sandbox: dict[str, Path]) -> None:
    """The shared library's own corpus: every entry refused, nothing created.

    Entries that are not Markdown names (``nul``, ``b.md.``) stop at the extension check.
    """
    from hostd_fs import HOSTILE_PATHS

    root = sandbox["root"]
    before = tree(root)
    async with connect(config=host_config([root])) as client:
        envelopes = [await update(client, content="attack", file_path=path) for path in HOSTILE_PATHS]
    for path, envelope in zip(HOSTILE_PATHS, envelopes, strict=True):
        assert envelope["status"] == "error", path
        markdown = path.lower().endswith((".md", ".markdown"))
        expected = {"PATH_NOT_ALLOWED", "PATH_TOO_LONG"} if markdown else {"INVALID_ARGUMENT"}
        assert envelope["error"]["code"] in expected, (path, envelope["error"])
        assert envelope["error"]["hint"], path
    assert tree(root) == before


async def test_symlink_inside_the_root_is_followed(connect: Connect, sandbox: dict[str, Path]) -> None:
    root = sandbox["root"]
    (root / "real").mkdir()
    (root / "alias").symlink_to(root / "real", target_is_directory=True)
    async with connect(config=host_config([root])) as client:
        envelope = await update(client, content="via alias", file_path="alias/a.md")
    assert envelope["file_path"] == str((root / "real" / "a.md").resolve())
    assert (root / "real" / "a.md").read_text() == "via alias"


async def test_absolute_path_inside_the_root_is_accepted(connect: Connect, sandbox: dict[str, Path]) -> None:
    root = sandbox["root"]
    target = root / "deep" / "er" / "abs.md"
    async with connect(config=host_config([root])) as client:
        envelope = await update(client, content="abs", file_path=str(target))
    assert envelope["status"] == "success"
    assert envelope["file_path"] == str(target.resolve())
    assert target.read_text() == "abs"


async def test_relative_paths_start_at_the_first_root(connect: Connect, tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    async with connect(config=host_config([first, second])) as client:
        relative = await update(client, content="r", file_path="r.md")
        in_second = await update(client, content="s", file_path=str(second / "s.md"))
    assert relative["file_path"] == str((first / "r.md").resolve())
    assert in_second["status"] == "success"
    assert (second / "s.md").read_text() == "s"


# --- client roots ---------------------------------------------------------------------------


async def test_client_roots_narrow_the_allowed_roots(connect: Connect, tmp_path: Path) -> None:
    allowed = tmp_path / "allowed"
    project, other = allowed / "project", allowed / "other"
    project.mkdir(parents=True)
    other.mkdir()
    async with connect(config=host_config([allowed]), list_roots_callback=roots_callback(project)) as client:
        inside = await update(client, content="ok", file_path=str(project / "a.md"))
        relative = await update(client, content="rel", file_path="rel.md")
        refused = await update(client, content="no", file_path=str(other / "b.md"))
        refused_above = await update(client, content="no", file_path=str(allowed / "c.md"))
    assert inside["status"] == "success"
    assert (project / "a.md").read_text() == "ok"
    assert relative["file_path"] == str((project / "rel.md").resolve())
    assert refused["error"]["code"] == "PATH_NOT_ALLOWED"
    assert refused_above["error"]["code"] == "PATH_NOT_ALLOWED"
    assert not (other / "b.md").exists()
    assert not (allowed / "c.md").exists()


async def test_client_roots_alone_bound_writes_when_nothing_is_configured(
    connect: Connect, tmp_path: Path
) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    async with connect(
        config=host_config(None), cwd=elsewhere, list_roots_callback=roots_callback(project)
    ) as client:
        relative = await update(client, content="rel", file_path="notes/rel.md")
        refused = await update(client, content="no", file_path=str(elsewhere / "x.md"))
    assert relative["file_path"] == str((project / "notes" / "rel.md").resolve())
    assert refused["error"]["code"] == "PATH_NOT_ALLOWED"
    assert tree(elsewhere) == []


async def test_client_root_outside_the_allowed_roots_allows_nothing(connect: Connect, tmp_path: Path) -> None:
    allowed, foreign = tmp_path / "allowed", tmp_path / "foreign"
    allowed.mkdir()
    foreign.mkdir()
    async with connect(config=host_config([allowed]), list_roots_callback=roots_callback(foreign)) as client:
        in_allowed = await update(client, content="x", file_path=str(allowed / "a.md"))
        in_foreign = await update(client, content="x", file_path=str(foreign / "a.md"))
    assert in_allowed["error"]["code"] == "PATH_NOT_ALLOWED"
    assert in_foreign["error"]["code"] == "PATH_NOT_ALLOWED"
    assert tree(allowed) == []
    assert tree(foreign) == []


# --- the working folder as the implicit root ---------------------------------------------------


@pytest.mark.served
async def test_working_folder_is_the_root_when_nothing_is_configured(
    connect: Connect, tmp_path: Path
) -> None:
    async with connect(config=host_config(None), cwd=tmp_path) as client:
        envelope = await update(client, content="hello", file_path="notes/a.md")
        refused = await update(client, content="x", file_path="../escape.md")
    assert envelope["file_path"] == str((tmp_path / "notes" / "a.md").resolve())
    assert (tmp_path / "notes" / "a.md").read_text() == "hello"
    assert refused["error"]["code"] == "PATH_NOT_ALLOWED"


@pytest.mark.parametrize("where", ["/", "home"])
async def test_filesystem_root_and_home_are_never_implicit_roots(
    connect: Connect, where: str, tmp_path: Path
) -> None:
    cwd = Path("/") if where == "/" else Path.home()
    before = sorted(os.listdir(cwd))
    async with connect(config=host_config(None, "en"), cwd=cwd) as client:
        envelope = await update(client, content="x", file_path="hostd-summary-writer-test.md")
    assert envelope["error"]["code"] == "PATH_NOT_ALLOWED"
    assert "allowed_roots" in envelope["error"]["hint"]
    assert sorted(os.listdir(cwd)) == before
