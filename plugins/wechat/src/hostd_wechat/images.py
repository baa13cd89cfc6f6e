"""``images: local``: an article's images stored in a folder beside its Markdown file.

Each distinct image link of the article is checked against ``image_url_prefixes`` (an
``http://`` link is fetched over ``https://`` when only that is listed, as WeChat's CDN serves
both), fetched with the plugin's own fetcher (``fetch.fetch_bytes``: the same per-attempt
deadline, redirect checks, size cap, retries and cancellation as pages) and kept only when its
first bytes say PNG, JPEG, GIF or WebP. SVG is refused, not sanitised: it is a document that
can carry scripts and links, and WeChat's CDN serves article images as bitmaps anyway.

Files are named by content (``<sha256, 32 hex digits>.<real type>``), so the same picture
linked twice, or under two URLs, is stored once, and no part of a URL or of the server's
answer ever becomes part of a path. They are written with ``atomic_write`` beneath the root's
descriptor. Whatever is not stored keeps its remote link and is reported with a reason.

Downloads of one call run on at most twice ``concurrency`` threads of the call's own executor
and take the same fetch slots as the pages, so pages and images together never have more than
``concurrency`` requests in flight, while the other threads hash and write (fsync) what has
arrived, keeping the slots busy. Per article, at most ``max_images_per_article`` images and
``max_image_bytes_per_article`` bytes are stored; the rest stay remote with a warning.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin

from hostd import Text
from hostd_wechat.fetch import FetchCanceller, FetchOptions, fetch_bytes
from hostd_wechat.models import MAX_IMAGE_PROBLEMS, ArticleImages, ImageProblem, Settings
from hostd_wechat.urls import MALFORMED_URL, UrlPrefix, check_url

IMAGE_ACCEPT = "image/webp,image/png,image/jpeg,image/gif;q=0.9,*/*;q=0.1"
ASSETS_SUFFIX = ".assets"
_HASH_CHARS = 32
# Characters of a folder name written as they are in a Markdown link; every other ASCII
# character (space, parentheses, brackets, '%', '#', '?', ...) is percent-encoded, so the link
# is one token for every Markdown reader (and for the digest's image filter). Non-ASCII stays.
_LINK_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def image_extension(data: bytes) -> str | None:
    """The extension of the bitmap type ``data`` starts with (PNG, JPEG, GIF, WebP), else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


def looks_like_svg(data: bytes) -> bool:
    head = data[:4096].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    return head.startswith((b"<svg", b"<!doctype svg")) or (head.startswith(b"<?xml") and b"<svg" in head)


def assets_folder_name(markdown_name: str) -> str:
    """``Title.md`` keeps its images in ``Title.assets``."""
    stem = markdown_name[:-3] if markdown_name.lower().endswith(".md") else markdown_name
    return stem + ASSETS_SUFFIX


def markdown_link(folder_name: str, file_name: str) -> str:
    """The relative link to ``folder_name/file_name`` as a single Markdown link destination."""
    encoded = "".join(c if c in _LINK_SAFE or ord(c) > 0x7F else f"%{ord(c):02X}" for c in folder_name)
    return f"{encoded}/{file_name}"


def admitted_url(raw: str, base_url: str, prefixes: list[UrlPrefix]) -> tuple[str | None, Text | None]:
    """``(url to fetch, None)`` for an allowed image link, else ``(None, why not)``."""
    try:
        url = urljoin(base_url, raw.strip())
    except ValueError:
        return None, MALFORMED_URL
    refusal = check_url(url, prefixes)
    if refusal is None:
        return url, None
    if url[:7].lower() == "http://":
        upgraded = "https://" + url[7:]
        if check_url(upgraded, prefixes) is None:
            return upgraded, None
    return None, refusal


@dataclass
class _Outcome:
    name: str | None = None
    written: int = 0
    reason: str | None = None


@dataclass
class _ArticleBudget:
    """The byte budget of one article's images, shared by its download threads."""

    limit: int
    used: int = 0
    exhausted: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, size: int) -> bool:
        with self.lock:
            if self.used + size > self.limit:
                self.exhausted = True
                return False
            self.used += size
            return True


class ImageDownloader:
    """The image downloads of one ``read_wechat_articles`` call (``close()`` when it ends)."""

    def __init__(
        self,
        *,
        settings: Settings,
        page_options: FetchOptions,
        concurrency: int,
        fetch_slots: threading.BoundedSemaphore,
        canceller: FetchCanceller,
        cancelled: Callable[[], bool],
        roots: Callable[[], list[Path]],
    ) -> None:
        self.settings = settings
        self.options = dataclasses.replace(
            page_options,
            prefixes=[UrlPrefix.parse(p) for p in settings.image_url_prefixes],
            max_bytes=settings.max_image_bytes,
            accept=IMAGE_ACCEPT,
            read_error_bodies=False,
        )
        self.concurrency = concurrency
        self.fetch_slots = fetch_slots
        self.canceller = canceller
        self.cancelled = cancelled
        self.roots = roots
        self._lock = threading.Lock()
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._closed = False
        self._stored: set[Path] = set()
        self._path_locks: dict[Path, threading.Lock] = {}

    def _pool(self) -> concurrent.futures.ThreadPoolExecutor:
        with self._lock:
            if self._closed:
                raise RuntimeError("the call has ended")
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=self.concurrency * 2, thread_name_prefix="wechat-images"
                )
            return self._executor

    def close(self) -> None:
        """Drop downloads not started; those running end at their socket's shutdown or deadline."""
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    def localise(
        self, image_urls: list[str], *, base_url: str, markdown_path: Path
    ) -> tuple[dict[str, str], ArticleImages, Text | None]:
        """Store the images of the article saved at ``markdown_path``.

        Returns the links to rewrite (remote link as written in the page -> relative path), the
        item's report, and the warning for images left remote by a limit (the caller renders it
        into the report's ``warning``).
        """
        distinct = list(dict.fromkeys(url for url in image_urls if url))
        folder = markdown_path.parent / assets_folder_name(markdown_path.name)
        budget = _ArticleBudget(self.settings.max_image_bytes_per_article)
        roots = self.roots()
        outcomes: list[_Outcome | concurrent.futures.Future[_Outcome]] = []
        for index, raw in enumerate(distinct):
            if index >= self.settings.max_images_per_article:
                outcomes.append(_Outcome(reason="article_limit"))
                continue
            url, _refusal = admitted_url(raw, base_url, self.options.prefixes)
            if url is None:
                outcomes.append(_Outcome(reason="not_allowed"))
                continue
            try:
                outcomes.append(self._pool().submit(self._store, url, folder, budget, roots))
            except RuntimeError:  # the call ended (cancelled) meanwhile
                outcomes.append(_Outcome(reason="cancelled"))
        futures = [outcome for outcome in outcomes if isinstance(outcome, concurrent.futures.Future)]
        concurrent.futures.wait(futures)
        links: dict[str, str] = {}
        problems: list[ImageProblem] = []
        written = remote = 0
        for raw, outcome in zip(distinct, outcomes, strict=True):
            result = self._result_of(outcome)
            if result.name is not None:
                links[raw] = markdown_link(folder.name, result.name)
                written += result.written
            else:
                remote += 1
                if len(problems) < MAX_IMAGE_PROBLEMS:
                    problems.append(ImageProblem(url=raw, reason=result.reason or "cancelled"))
        return (
            links,
            ArticleImages(
                found=len(distinct),
                saved=len(links),
                remote=remote,
                bytes_written=written,
                folder=str(folder) if links else None,
                problems=problems,
            ),
            self._warning(len(distinct), budget),
        )

    @staticmethod
    def _result_of(outcome: _Outcome | concurrent.futures.Future[_Outcome]) -> _Outcome:
        if isinstance(outcome, _Outcome):
            return outcome
        if outcome.cancelled():
            return _Outcome(reason="cancelled")
        return outcome.result()

    def _warning(self, found: int, budget: _ArticleBudget) -> Text | None:
        warnings = []
        most = self.settings.max_images_per_article
        if found > most:
            warnings.append(
                Text(
                    en="The article links {found} images; only the first {most} were considered "
                    "(setting max_images_per_article), the rest keep their remote links.",
                    zh="本文链接了 {found} 张图片，只处理了前 {most} 张（设置 max_images_per_article），"
                    "其余保留远程链接。",
                ).format(found=found, most=most)
            )
        if budget.exhausted:
            warnings.append(
                Text(
                    en="The article's images reached {limit} bytes (setting max_image_bytes_per_article); "
                    "the images past it keep their remote links.",
                    zh="本文图片已达 {limit} 字节（设置 max_image_bytes_per_article），"
                    "超出部分保留远程链接。",
                ).format(limit=self.settings.max_image_bytes_per_article)
            )
        return Text.join(warnings, en=" ", zh="") if warnings else None

    def _store(self, url: str, folder: Path, budget: _ArticleBudget, roots: list[Path]) -> _Outcome:
        """Download one image and store it under its content name (runs in the executor)."""
        if self.cancelled():
            return _Outcome(reason="cancelled")
        with self.fetch_slots:
            if budget.exhausted:  # checked once the slot is ours: the wait may have been long
                return _Outcome(reason="article_limit")
            result = fetch_bytes(url, self.options, self.canceller)
        if not result.ok:
            return _Outcome(reason=result.reason or "connection_failed")
        if not 200 <= result.http_status < 300:
            return _Outcome(reason=f"http_{result.http_status}")
        extension = image_extension(result.body)
        if extension is None:
            return _Outcome(reason="svg_refused" if looks_like_svg(result.body) else "not_an_image")
        if not budget.take(len(result.body)):
            return _Outcome(reason="article_limit")
        name = f"{hashlib.sha256(result.body).hexdigest()[:_HASH_CHARS]}.{extension}"
        return self._write(folder / name, result.body, roots)

    def _write(self, path: Path, data: bytes, roots: list[Path]) -> _Outcome:
        """Write ``data`` at ``path`` once per call; a file already there by that name holds it."""
        from hostd_fs import FsError, atomic_write, resolve_beneath

        with self._lock:
            path_lock = self._path_locks.setdefault(path, threading.Lock())
        with path_lock:
            if path in self._stored:
                return _Outcome(name=path.name)
            if self.cancelled():
                return _Outcome(reason="cancelled")
            try:
                # Resolved and written beneath the root: the folder may have been swapped meanwhile.
                target = resolve_beneath(str(path), roots)
                written = 0 if target.exists() else atomic_write(target, data)
            except (OSError, FsError):
                return _Outcome(reason="write_error")
            self._stored.add(path)
            return _Outcome(name=path.name, written=written)
