"""summarize_articles on careless or hostile inputs: existing outputs, refused files, pipes, globs."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import call
from wechat_testlib import wechat_client

from hostd import Text

pytestmark = pytest.mark.anyio

ARTICLE = (
    "---\ntitle: Plain Article\n---\n\n# Plain Article\n\nA sentence about storage. Another one follows.\n"
)


def _write(root: Path, relative: str, text: str = ARTICLE) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def _summarize(
    data_dir: Path, root: Path, arguments: dict[str, Any], language: str = "en"
) -> dict[str, Any]:
    async with wechat_client(data_dir, root, language=language) as client:
        return await call(client, "summarize_articles", **arguments)


async def test_an_existing_digest_is_refused_unless_overwrite(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    _write(hostd_roots, "in/a.md")
    existing = _write(hostd_roots, "out/digest.md", "KEEP ME\n")
    refused = await _summarize(
        hostd_data_dir, hostd_roots, {"input_dir": "in", "output_path": "out/digest.md"}
    )
    assert refused["status"] == "error"
    assert refused["error"]["code"] == "ALREADY_EXISTS"
    assert "overwrite" in refused["error"]["hint"]
    assert refused["error"]["details"]["path"] == str(existing)
    assert existing.read_text(encoding="utf-8") == "KEEP ME\n"
    replaced = await _summarize(
        hostd_data_dir, hostd_roots, {"input_dir": "in", "output_path": "out/digest.md", "overwrite": True}
    )
    assert replaced["status"] == "success"
    assert "Plain Article" in existing.read_text(encoding="utf-8")
    zh = await _summarize(
        hostd_data_dir, hostd_roots, {"input_dir": "in", "output_path": "out/digest.md"}, language="zh"
    )
    assert zh["error"]["code"] == "ALREADY_EXISTS"
    assert "overwrite" in zh["error"]["hint"]
    assert "already" not in zh["error"]["message"] + zh["error"]["hint"]


@pytest.mark.parametrize("name", ["out/digest.txt", "out/digest", "out/digest.md.exe", "out/.md"])
async def test_a_digest_name_that_is_not_markdown_is_refused(
    hostd_data_dir: Path, hostd_roots: Path, name: str
) -> None:
    _write(hostd_roots, "in/a.md")
    refused = await _summarize(hostd_data_dir, hostd_roots, {"input_dir": "in", "output_path": name})
    assert refused["error"]["code"] == "INVALID_ARGUMENT"
    assert refused["error"]["details"]["argument"] == "output_path"
    assert ".md" in refused["error"]["hint"]
    assert not (hostd_roots / "out").exists()


async def test_markdown_suffixes_are_accepted_in_any_case(hostd_data_dir: Path, hostd_roots: Path) -> None:
    _write(hostd_roots, "in/a.md")
    for name in ["out/a.markdown", "out/b.MD", "out/summary_{date}.md"]:
        envelope = await _summarize(hostd_data_dir, hostd_roots, {"input_dir": "in", "output_path": name})
        assert envelope["status"] == "success", (name, envelope)


async def test_files_outside_the_roots_are_each_refused_as_path_not_allowed(
    hostd_data_dir: Path, hostd_roots: Path, tmp_path: Path
) -> None:
    outside = _write(tmp_path, "outside/secret.md")
    _write(hostd_roots, "in/a.md")
    (hostd_roots / "in" / "link.md").symlink_to(outside)
    (hostd_roots / "in" / "zero.md").symlink_to("/dev/zero")
    os.mkfifo(hostd_roots / "in" / "pipe.md")
    refused_files = [str(outside), "../outside/secret.md", "in/link.md", "in/zero.md", "in/pipe.md"]
    started = time.monotonic()
    envelope = await _summarize(hostd_data_dir, hostd_roots, {"files": refused_files})
    assert time.monotonic() - started < 5
    assert envelope["status"] == "error"
    assert envelope["error"]["code"] == "PATH_NOT_ALLOWED"
    listed = envelope["error"]["details"]["problems"]
    assert [p["path"] for p in listed] == refused_files
    assert {p["code"] for p in listed} == {"PATH_NOT_ALLOWED"}
    mixed = await _summarize(
        hostd_data_dir, hostd_roots, {"files": ["in/a.md", *refused_files], "output_path": "d.md"}
    )
    assert mixed["status"] == "success"
    assert mixed["article_count"] == 1
    assert [(e["path"], e["code"]) for e in mixed["errors"]] == [
        (p, "PATH_NOT_ALLOWED") for p in refused_files
    ]
    digest = (hostd_roots / "d.md").read_text(encoding="utf-8")
    assert "secret" not in digest.lower()
    assert "Plain Article" in digest


async def test_refused_files_are_explained_in_chinese(
    hostd_data_dir: Path, hostd_roots: Path, tmp_path: Path
) -> None:
    outside = _write(tmp_path, "outside/secret.md")
    envelope = await _summarize(hostd_data_dir, hostd_roots, {"files": [str(outside)]}, language="zh")
    assert envelope["error"]["code"] == "PATH_NOT_ALLOWED"
    text = envelope["error"]["message"] + envelope["error"]["hint"]
    assert "允许" in text
    assert str(outside) not in text
    assert not any(word in text for word in ("None of", "refused", "allowed", "Give "))
    assert "允许" in envelope["error"]["details"]["problems"][0]["message"]


async def test_inputs_swapped_for_links_after_the_check_are_path_not_allowed_each(
    hostd_data_dir: Path, hostd_roots: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file passed the path check, then each was replaced by a link (out of the roots, to a
    device) before it was read: the refusal is the path rules' for each file, not "not UTF-8"."""
    from hostd_wechat import sources
    from hostd_wechat.tools import digest

    outside = _write(tmp_path, "outside/secret.md")
    inputs = [_write(hostd_roots, "in/a.md"), _write(hostd_roots, "in/b.md")]
    targets = [outside, Path("/dev/zero")]
    checked = sources.collect

    def collect_then_swap(*args: Any, **kwargs: Any) -> list[Path]:
        paths: list[Path] = checked(*args, **kwargs)
        for path, target in zip(inputs, targets, strict=True):
            path.unlink()
            path.symlink_to(target)
        return paths

    monkeypatch.setattr(digest, "collect", collect_then_swap)
    envelope = await _summarize(hostd_data_dir, hostd_roots, {"files": ["in/a.md", "in/b.md"]})
    assert envelope["status"] == "error", envelope
    assert envelope["error"]["code"] == "PATH_NOT_ALLOWED", envelope["error"]
    assert "UTF-8" not in envelope["error"]["hint"]
    problems = envelope["error"]["details"]["problems"]
    assert [(p["path"], p["code"]) for p in problems] == [(str(p), "PATH_NOT_ALLOWED") for p in inputs]


def _read_in_thread(path: Path) -> tuple[threading.Thread, dict[str, Any]]:
    from hostd_wechat.sources import read_source

    outcome: dict[str, Any] = {"problems": [], "warnings": []}

    def run() -> None:  # the file's own folder is the allowed root
        outcome["article"] = read_source(path, [path.parent], outcome["problems"], outcome["warnings"])

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def test_a_pipe_swapped_in_after_the_check_is_refused_promptly(tmp_path: Path) -> None:
    """The path check passed on a regular file; a FIFO took its place before the read."""
    pipe = tmp_path / "swapped.md"
    os.mkfifo(pipe)
    thread, outcome = _read_in_thread(pipe)
    thread.join(timeout=3)
    if thread.is_alive():  # unblock the reader before failing, so the test run can go on
        os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(timeout=3)
        pytest.fail("reading a FIFO blocked")
    assert outcome["article"] is None
    assert [(p.code, p.path) for p in outcome["problems"]] == [("PATH_NOT_ALLOWED", str(pipe))]


def test_a_device_swapped_in_after_the_check_is_never_read(tmp_path: Path) -> None:
    link = tmp_path / "zero.md"
    link.symlink_to("/dev/zero")
    thread, outcome = _read_in_thread(link)
    thread.join(timeout=3)
    assert not thread.is_alive()
    assert outcome["article"] is None
    assert [p.code for p in outcome["problems"]] == ["PATH_NOT_ALLOWED"]


@pytest.mark.parametrize(
    "pattern",
    ["**/**/**/**/**/**/**/**/**/**/**/**/*.md", "a/**/b/**/*.md", "**/x/**"],
)
async def test_a_glob_with_more_than_one_double_star_is_refused(
    hostd_data_dir: Path, hostd_roots: Path, pattern: str
) -> None:
    _write(hostd_roots, "in/a.md")
    started = time.monotonic()
    envelope = await _summarize(hostd_data_dir, hostd_roots, {"input_dir": "in", "glob": pattern})
    assert time.monotonic() - started < 3
    assert envelope["error"]["code"] == "INVALID_ARGUMENT"
    assert envelope["error"]["details"]["argument"] == "glob"
    assert "**" in envelope["error"]["hint"]


async def test_globs_still_match_like_pathlib(hostd_data_dir: Path, hostd_roots: Path) -> None:
    for relative in ["in/a.md", "in/x/b.md", "in/x/y/c.md", "in/x/y/c.txt", "in/z/d.md", "in/x/.hidden.md"]:
        _write(hostd_roots, relative, ARTICLE.replace("Plain Article", Path(relative).stem))
    (hostd_roots / "in" / "loop").symlink_to(hostd_roots / "in")  # a folder link is not walked into
    cases = {
        "**/*.md": {"a", "b", "c", "d", ".hidden"},
        "*.md": {"a"},
        "x/**/*.md": {"b", "c", ".hidden"},
        "x/*/c.*": {"c"},
        "[ab].md": {"a"},
        "**/?.md": {"a", "b", "c", "d"},
    }
    for pattern, expected in cases.items():
        envelope = await _summarize(
            hostd_data_dir,
            hostd_roots,
            {
                "input_dir": "in",
                "glob": pattern,
                "output_path": "out.md",
                "overwrite": True,
                "response_format": "detailed",
            },
        )
        found = {Path(s["source_file"]).stem for s in envelope["sections_overview"]}
        assert found == expected, pattern


async def test_a_walk_past_its_bound_stops_and_says_which_bound(
    hostd_data_dir: Path, hostd_roots: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hostd_wechat.sources as tool

    for index in range(30):
        _write(hostd_roots, f"in/d{index:02}/a.md")
    monkeypatch.setattr(tool, "MAX_WALK_ENTRIES", 40)
    envelope = await _summarize(hostd_data_dir, hostd_roots, {"input_dir": "in", "output_path": "o.md"})
    assert envelope["status"] == "success"
    assert 0 < envelope["article_count"] < 30
    assert any("40" in warning and "entries" in warning for warning in envelope["warnings"])
    monkeypatch.setattr(tool, "GLOB_DEADLINE_S", 0.0)
    late = await _summarize(hostd_data_dir, hostd_roots, {"input_dir": "in", "output_path": "p.md"})
    assert late["status"] == "error"
    assert late["error"]["code"] == "EMPTY_INPUT"
    assert late["error"]["details"]["bound"] == "time"
    assert "input_dir" in late["error"]["hint"]


def test_a_cancelled_call_stops_walking(tmp_path: Path) -> None:
    from hostd_wechat.sources import glob_matcher, walk_matching

    from hostd import ToolError

    _write(tmp_path, "a/b.md")
    with pytest.raises(ToolError) as raised:
        walk_matching(tmp_path, glob_matcher("**/*.md"), lambda: True)
    assert raised.value.message == Text(en="Cancelled.", zh="已取消。")
    assert raised.value.code == "CANCELLED"
