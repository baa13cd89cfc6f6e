"""The digest's inputs: which Markdown files, found how, and what each one says.

Inputs are ``files`` or ``input_dir`` + ``glob``, every path held inside the roots. The glob
walk is bounded (entries looked at, seconds spent, the client's cancel) so no pattern or tree
keeps the server busy; a file that cannot be used is skipped with the reason, never fatal on
its own. Each file's front matter (YAML, else ``key: value`` lines, else none) gives the
section's metadata.
"""

from __future__ import annotations

import fnmatch
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hostd import Text, ToolError
from hostd_wechat.extractive import ArticleText, article_text
from hostd_wechat.frontmatter import split_front_matter

MAX_INPUT_FILES = 5_000
MAX_FILE_BYTES = 5 * 1024 * 1024
# Bounds of the glob walk: entries looked at, and seconds spent, before it stops with what it found.
MAX_WALK_ENTRIES = 200_000
GLOB_DEADLINE_S = 10.0
DEFAULT_INPUT_DIR = "exports/articles"

NARROW_HINT = Text(
    en="Point input_dir at a smaller folder, use a narrower glob, or list the files.",
    zh="请将 input_dir 指向更小的文件夹、使用更窄的 glob，或直接列出 files。",
)
NOT_UTF8 = Text(en="not UTF-8 text", zh="不是 UTF-8 文本")


@dataclass
class SourceArticle:
    """One input file as the digest uses it; ``summary`` is filled in by the summarizer."""

    path: Path
    metadata: dict[str, object]
    body: str
    title: str
    text: ArticleText
    summary: str = ""


@dataclass(frozen=True)
class SkippedFile:
    """An input left out of the digest, and why (the answer's ``errors`` and error details)."""

    path: str
    code: str
    message: Text

    def as_detail(self) -> dict[str, Any]:
        """The error-details form; the host renders ``message`` in the server's language."""
        return {"path": self.path, "code": self.code, "message": self.message}


def _bad_glob(pattern: str) -> bool:
    parts = re.split(r"[\\/]+", pattern)
    return pattern.startswith(("/", "\\", "~")) or ".." in parts or ":" in pattern or "\x00" in pattern


def collect(
    files: list[str] | None,
    input_dir: str | None,
    pattern: str,
    *,
    roots: list[Path],
    cancelled: Callable[[], bool],
    skipped: list[SkippedFile],
    warnings: list[Text],
) -> list[Path]:
    """The files to summarize: ``files`` as given, else ``pattern`` matched under ``input_dir``."""
    from hostd_fs import FsError, resolve_in_roots

    found: list[Path] = []
    if files:
        for entry in files:
            try:
                found.append(resolve_in_roots(entry, roots, allow_missing=False, expect="file"))
            except FsError as exc:
                skipped.append(SkippedFile(path=entry, code=exc.code, message=exc.message))
        return list(dict.fromkeys(found))
    if _bad_glob(pattern):
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(en="glob must be a relative pattern without '..'.", zh="glob 必须是不含 '..' 的相对模式。"),
            hint=Text(en="For example '**/*.md'.", zh="例如 '**/*.md'。"),
            details={"argument": "glob"},
        )
    matcher = glob_matcher(pattern)
    folder = resolve_in_roots(input_dir or DEFAULT_INPUT_DIR, roots, allow_missing=False, expect="dir")
    walk = walk_matching(folder, matcher, cancelled)
    if walk.bound is not None:
        warnings.append(bound_text(walk.bound))
    for match in walk.matches[: MAX_INPUT_FILES * 2]:
        try:
            resolved = resolve_in_roots(str(match), roots, allow_missing=False, expect="any")
        except FsError as exc:
            skipped.append(SkippedFile(path=str(match), code=exc.code, message=exc.message))
            continue
        if resolved.is_file():
            found.append(resolved)
    if not found and walk.bound is not None:
        raise ToolError(
            "EMPTY_INPUT",
            Text(
                en="No Markdown file matched before the search stopped: ",
                zh="搜索停止前没有匹配到任何 Markdown 文件：",
            )
            + bound_text(walk.bound),
            hint=NARROW_HINT,
            details={"bound": walk.bound, "problems": [s.as_detail() for s in skipped[:20]]},
        )
    return list(dict.fromkeys(found))[:MAX_INPUT_FILES]


@dataclass
class GlobMatcher:
    """A glob split into segment patterns around at most one ``**`` (so matching is linear)."""

    head: list[re.Pattern[str]]
    tail: list[re.Pattern[str]] | None  # None: no ``**``; the path has exactly ``head``'s depth

    def matches(self, parts: tuple[str, ...]) -> bool:
        if self.tail is None:
            return len(parts) == len(self.head) and _all_match(self.head, parts)
        if len(parts) < len(self.head) + len(self.tail):
            return False
        rest = parts[len(parts) - len(self.tail) :] if self.tail else ()
        return _all_match(self.head, parts[: len(self.head)]) and _all_match(self.tail, rest)

    def may_descend(self, depth: int) -> bool:
        """Whether a folder ``depth`` segments below the input folder can hold a match."""
        return self.tail is not None or depth < len(self.head)

    def may_enter(self, parts: tuple[str, ...]) -> bool:
        """Whether the folder at ``parts`` fits the fixed segments before any ``**``."""
        fixed = self.head[: len(parts)]
        return _all_match(fixed, parts[: len(fixed)])


def _all_match(patterns: list[re.Pattern[str]], parts: tuple[str, ...]) -> bool:
    return all(p.fullmatch(part) for p, part in zip(patterns, parts, strict=True))


def glob_matcher(pattern: str) -> GlobMatcher:
    """Compile ``pattern``; more than one ``**`` is refused (it would make the match exponential)."""
    segments = [s for s in re.split(r"[\\/]+", pattern) if s and s != "."]
    stars = [i for i, s in enumerate(segments) if s == "**"]
    if len(stars) > 1 or any("**" in s and s != "**" for s in segments) or not segments:
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(
                en="glob may hold '**' once, as a whole path segment.",
                zh="glob 中 '**' 至多出现一次，且须是完整的路径段。",
            ),
            hint=Text(
                en="Use one '**' for any depth, e.g. '**/*.md' or '2025/**/*.md'.",
                zh="用一个 '**' 表示任意层级，例如 '**/*.md' 或 '2025/**/*.md'。",
            ),
            details={"argument": "glob"},
        )

    def compiled(parts: list[str]) -> list[re.Pattern[str]]:
        return [re.compile(fnmatch.translate(part)) for part in parts]

    if not stars:
        return GlobMatcher(head=compiled(segments), tail=None)
    return GlobMatcher(head=compiled(segments[: stars[0]]), tail=compiled(segments[stars[0] + 1 :]))


@dataclass
class WalkResult:
    matches: list[Path]
    bound: str | None  # "entries" or "time" when the walk stopped early


def walk_matching(folder: Path, matcher: GlobMatcher, cancelled: Callable[[], bool]) -> WalkResult:
    """Files under ``folder`` that ``matcher`` accepts, in sorted order; folder links are not entered.

    The walk visits at most ``MAX_WALK_ENTRIES`` entries and stops at ``GLOB_DEADLINE_S`` or
    when the client cancels, so no pattern or tree keeps the server busy.
    """
    deadline = time.monotonic() + GLOB_DEADLINE_S
    matches: list[Path] = []
    visited = 0
    pending: list[tuple[Path, tuple[str, ...]]] = [(folder, ())]
    while pending:
        directory, parts = pending.pop()
        if cancelled():
            raise ToolError("CANCELLED", Text(en="Cancelled.", zh="已取消。"))
        if time.monotonic() > deadline:
            return WalkResult(sorted(matches), "time")
        try:
            with os.scandir(directory) as entries:
                listed = sorted(entries, key=lambda e: e.name)
        except OSError:
            continue
        folders = []
        for entry in listed:
            visited += 1
            if visited > MAX_WALK_ENTRIES:
                return WalkResult(sorted(matches), "entries")
            here = (*parts, entry.name)
            try:
                is_folder = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_folder:
                if matcher.may_descend(len(here)) and matcher.may_enter(here):
                    folders.append((Path(entry.path), here))
            elif matcher.matches(here):
                matches.append(Path(entry.path))
        pending.extend(reversed(folders))
    return WalkResult(sorted(matches), None)


def bound_text(bound: str) -> Text:
    """Why the walk stopped early (``bound`` is "entries" or "time")."""
    if bound == "entries":
        return Text(
            en="the search stopped after {count} entries; later files were not considered.",
            zh="搜索在检查 {count} 个条目后停止；之后的文件未被纳入。",
        ).format(count=MAX_WALK_ENTRIES)
    return Text(
        en="the search stopped after {seconds} s; later files were not considered.",
        zh="搜索在 {seconds} 秒后停止；之后的文件未被纳入。",
    ).format(seconds=f"{GLOB_DEADLINE_S:g}")


def read_source(
    path: Path, roots: list[Path], skipped: list[SkippedFile], warnings: list[Text]
) -> SourceArticle | None:
    """The article in ``path``, or None (with the reason in ``skipped`` and ``warnings``)."""
    from hostd_fs import FsError, read_beneath, resolve_beneath

    try:
        # Re-resolved and read beneath the root: its folder may have been swapped since listing, and
        # the file is opened without blocking and checked to be a regular file on its descriptor.
        raw = read_beneath(resolve_beneath(str(path), roots, allow_missing=False), max_bytes=MAX_FILE_BYTES)
    except FsError as exc:
        skipped.append(SkippedFile(path=str(path), code=exc.code, message=exc.message))
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        skipped.append(
            SkippedFile(
                path=str(path),
                code="READ_ERROR",
                message=Text(en="cannot read: ", zh="无法读取：") + NOT_UTF8,
            )
        )
        warnings.append(
            Text(en="Skipped {name}: ", zh="已跳过 {name}：").format(name=path.name)
            + NOT_UTF8
            + Text(en=".", zh="。")
        )
        return None
    metadata, body, _form = split_front_matter(text)
    title = str(metadata.get("title") or "").strip() or _first_heading(body) or path.stem
    return SourceArticle(
        path=path, metadata=metadata, body=body, title=" ".join(title.split()), text=article_text(body, title)
    )


def _first_heading(body: str) -> str:
    match = re.search(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$", body, re.MULTILINE)
    return match.group(1).strip() if match else ""
