"""Test helpers: the saved pages, and a real HTTP server on 127.0.0.1 that serves them.

The server is the plugin's only door in tests: its URL becomes the ``allowed_url_prefixes``
setting, exactly as a user would configure a mirror. Besides the saved pages (read from
``../shared/fixtures``, never copied) it answers slow, failing, redirecting, oversized and
script-rendered pages, and records every request so tests can see what was fetched.
"""

from __future__ import annotations

import base64
import html
import os
import shutil
import struct
import threading
import time
import zlib
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from hostd_testing import CHROMIUM, in_memory_client, require_or_skip

SHARED_FIXTURES = Path(__file__).resolve().parents[3].parent / "shared" / "fixtures"
LABELLED = SHARED_FIXTURES / "wechat"
UNLABELLED = SHARED_FIXTURES / "wechat-unlabeled"


def require_fixtures() -> Path:
    """The shared fixtures folder, or a skip (a failure when HOSTD_REQUIRE_FIXTURES=1)."""
    if (LABELLED / "expected.json").is_file() and UNLABELLED.is_dir():
        return SHARED_FIXTURES
    message = (
        f"WeChat fixtures not found at {SHARED_FIXTURES} (they live in ../shared/fixtures beside the repo)"
    )
    if os.environ.get("HOSTD_REQUIRE_FIXTURES") == "1":
        pytest.fail(message)
    pytest.skip(message)


def require_browser() -> str:
    """Chromium and Playwright, or a skip (a failure when HOSTD_REQUIRE_BROWSER=1)."""
    import importlib.util

    missing = []
    if not CHROMIUM.is_file() and shutil.which("chromium") is None:
        missing.append(f"Chromium at {CHROMIUM}")
    if importlib.util.find_spec("playwright") is None:
        missing.append("the playwright package")
    if missing:
        require_or_skip("headless test needs " + " and ".join(missing))
    return str(CHROMIUM) if CHROMIUM.is_file() else str(shutil.which("chromium"))


def generated_article(title: str, paragraphs: int = 40, account: str = "Test Account") -> bytes:
    """A small page in WeChat's article template (about 20 KB with the default length)."""
    body = "".join(
        f"<p>第{i}段：这是一篇用于测试的文章，内容关于本地服务器与并发抓取。Paragraph {i} of the text.</p>"
        for i in range(paragraphs)
    )
    page = f"""<!DOCTYPE html><html><head><meta charset="utf-8">
<meta property="og:title" content="{html.escape(title)}">
<meta name="author" content="Tester">
</head><body>
<h1 class="rich_media_title" id="activity-name">{html.escape(title)}</h1>
<a id="js_name">{html.escape(account)}</a>
<div class="rich_media_content" id="js_content">{body}<p>END-OF-ARTICLE</p></div>
<script>var ct = "1730080366";</script>
</body></html>"""
    return page.encode("utf-8")


JS_ONLY_PAGE = b"""<!DOCTYPE html><html><head><meta charset="utf-8"><title></title></head><body>
<h1 class="rich_media_title" id="activity-name"></h1>
<a id="js_name"></a>
<div class="rich_media_content" id="js_content"></div>
<script>
  var parts = ["Rendered", "by", "script"];
  document.getElementById("activity-name").textContent = parts.join(" ");
  document.getElementById("js_name").textContent = "Script Account";
  document.getElementById("js_content").innerHTML =
    "<p>" + ["Only", "a", "browser", "sees", "this", "paragraph."].join(" ") + "</p>";
</script>
</body></html>"""


# A 1x1 baseline JFIF image (checked with `file`: "JPEG image data, JFIF standard 1.01 ... 1x1").
_JPEG_1X1 = base64.b64decode(
    "/9j/4AAQSkZJRgABAQEAYABgAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcp"
    "LDAxNDQ0Hyc5PTgyPC4zNDL/wAALCAABAAEBAREA/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgED"
    "AwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RF"
    "RkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJ"
    "ytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/9oACAEBAAA/APn+iiigD//Z"
)


def tiny_png(seed: str) -> bytes:
    """A valid 1x1 PNG whose colour (so whose bytes) depends on ``seed``."""
    red, green, blue = zlib.crc32(seed.encode()).to_bytes(4, "big")[:3]

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(bytes([0, red, green, blue]))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


def tiny_jpeg(seed: str) -> bytes:
    """The 1x1 JPEG with a comment segment holding ``seed`` (still a valid JPEG)."""
    comment = seed.encode()[:200]
    return _JPEG_1X1[:2] + b"\xff\xfe" + struct.pack(">H", len(comment) + 2) + comment + _JPEG_1X1[2:]


def tiny_gif(seed: str) -> bytes:
    """A valid 1x1 GIF whose palette colour depends on ``seed``."""
    colour = zlib.crc32(seed.encode()).to_bytes(4, "big")[:3]
    return (
        b"GIF89a\x01\x00\x01\x00\x80\x00\x00" + colour + b"\xff\xff\xff"
        b",\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02D\x01\x00;"
    )


def tiny_image(kind: str, seed: str) -> bytes:
    return {"png": tiny_png, "jpeg": tiny_jpeg, "jpg": tiny_jpeg, "gif": tiny_gif}.get(kind, tiny_png)(seed)


class CdnServer:
    """A second loopback server standing in for WeChat's image CDN (mmbiz.qpic.cn).

    Paths are served like the CDN's (``/mmbiz_png/<id>/640?wx_fmt=png``): a tiny image of the
    ``wx_fmt`` type, different for every path. Hostile answers live under ``/bad/``.
    """

    def __init__(self, delay_s: float = 0.0, hold_until: int = 0) -> None:
        """``hold_until=N`` holds every answer until N requests have been in flight at once (or
        10 s passed), so a client allowed N connections reaches exactly N however loaded the machine."""
        self.delay_s = delay_s
        self.hold_until = hold_until
        self.requests: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._peak_reached = threading.Condition(self._lock)
        self.hang_up_seen = threading.Event()
        self.trickle_started = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                with server._lock:
                    server.requests.append(self.path)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    server._peak_reached.notify_all()
                    if not server._peak_reached.wait_for(
                        lambda: server.max_in_flight >= server.hold_until, timeout=10
                    ):
                        server.hold_until = 0  # never reached: stop holding, let the test see the peak
                counted = True
                try:
                    if server.delay_s:
                        time.sleep(server.delay_s)
                    # In flight until the answer starts: a client can only send its next request
                    # once this answer has reached it, so a loaded server thread still counting
                    # after its last write cannot make the peak exceed the client's limit.
                    with server._lock:
                        server.in_flight -= 1
                        counted = False
                    server.route(self)
                except (BrokenPipeError, ConnectionResetError):
                    server.hang_up_seen.set()
                finally:
                    if counted:
                        with server._lock:
                            server.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def count(self, fragment: str) -> int:
        with self._lock:
            return sum(1 for path in self.requests if fragment in path)

    @staticmethod
    def send(
        handler: BaseHTTPRequestHandler,
        status: int,
        body: bytes,
        content_type: str = "image/png",
        **headers: str,
    ) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            handler.send_header(key.replace("_", "-"), value)
        handler.end_headers()
        handler.wfile.write(body)

    def route(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        path, query = parts.path, parse_qs(parts.query)
        if path.startswith("/same/"):
            return self.send(handler, 200, tiny_png("always the same picture"))
        if path == "/bad/html":  # an "image" that is a web page, labelled as a PNG
            return self.send(handler, 200, generated_article("Not a picture"), "image/png")
        if path == "/bad/svg":
            svg = b'<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
            return self.send(handler, 200, svg, "image/svg+xml")
        if path == "/bad/huge":  # 50 MB of PNG, with or without a declared length
            return self._huge(handler, declared="declared" in query)
        if path == "/bad/redirect":
            return self.send(handler, 302, b"", Location=query["to"][0])
        if path == "/bad/loop":
            return self.send(handler, 302, b"", Location="/bad/loop")
        if path == "/bad/trickle":
            return self._trickle(handler)
        if path == "/bad/missing":
            return self.send(handler, 404, b"no such picture", "text/plain")
        if path == "/bad/named":  # a hostile file name offered by the server
            return self.send(
                handler,
                200,
                tiny_png(path),
                Content_Disposition='attachment; filename="../../../evil.png"',
            )
        kind = query.get("wx_fmt", ["png"])[0]
        return self.send(handler, 200, tiny_image(kind, handler.path), f"image/{kind}")

    @staticmethod
    def _huge(handler: BaseHTTPRequestHandler, *, declared: bool) -> None:
        size = 50 * 1024 * 1024
        handler.send_response(200)
        handler.send_header("Content-Type", "image/png")
        if declared:
            handler.send_header("Content-Length", str(size))
        handler.send_header("Connection", "close")
        handler.end_headers()
        chunk = tiny_png("huge") + b"\0" * (1024 * 1024 - len(tiny_png("huge")))
        for _ in range(50):
            handler.wfile.write(chunk)

    def _trickle(self, handler: BaseHTTPRequestHandler) -> None:
        self.trickle_started.set()
        body = tiny_png("trickle") + b"\0" * 400
        handler.send_response(200)
        handler.send_header("Content-Type", "image/png")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        stop = time.monotonic() + 20
        try:
            for index in range(len(body)):
                if time.monotonic() > stop:
                    break
                handler.wfile.write(body[index : index + 1])
                handler.wfile.flush()
                time.sleep(0.05)
        except OSError:
            self.hang_up_seen.set()

    def __enter__(self) -> CdnServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def gallery_page(title: str, sources: list[str]) -> bytes:
    """An article whose body shows ``sources`` as WeChat does (``data-src``, no ``src``)."""
    images = "".join(
        f'<p><img data-src="{html.escape(src)}" alt="pic {n}"/></p>' for n, src in enumerate(sources)
    )
    page = f"""<!DOCTYPE html><html><head><meta charset="utf-8">
<meta property="og:title" content="{html.escape(title)}"></head><body>
<h1 class="rich_media_title" id="activity-name">{html.escape(title)}</h1>
<a id="js_name">Gallery Account</a>
<div class="rich_media_content" id="js_content"><p>A gallery of pictures for the image tests.</p>{images}
<p>END-OF-ARTICLE</p></div>
<script>var ct = "1730080366";</script>
</body></html>"""
    return page.encode("utf-8")


class ArticleServer:
    """A threaded ``http.server`` on 127.0.0.1 with the routes the tests need; over TLS when
    given a certificate and key (PEM files)."""

    def __init__(self, tls: tuple[Path, Path] | None = None) -> None:
        self.scheme = "https" if tls else "http"
        #: Where ``/s/fixture-cdn/`` pages point WeChat's image CDN (set by image tests).
        self.cdn_base = ""
        self.requests: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._flaky_counts: dict[str, int] = {}
        # Trickled answers whose client hung up: the server saw the connection closed.
        self.hung_up: list[str] = []
        self.hang_up_seen = threading.Event()
        self.trickle_started = threading.Event()
        # Requests whose answer was complete or given up on (the handler returned), in that order.
        self.finished: list[str] = []
        #: Per request path, its ``Via`` header (a proxy adds one) and whether it carried
        #: ``Proxy-Authorization`` (a proxy must never pass that on).
        self.via: dict[str, str | None] = {}
        self.proxy_credentials_seen: list[str] = []
        self._closing = threading.Event()  # ends /s/hang early when the server shuts down
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_GET(self) -> None:
                with server._lock:
                    server.requests.append(self.path)
                    server.via[self.path] = self.headers.get("Via")
                    if self.headers.get("Proxy-Authorization") is not None:
                        server.proxy_credentials_seen.append(self.path)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    server.route(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    with server._lock:
                        server.in_flight -= 1
                        server.finished.append(self.path)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        if tls is not None:
            import ssl

            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    @property
    def prefix(self) -> str:
        return f"{self.base}/s"

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def fixture_url(self, name: str) -> str:
        return self.url(f"/s/fixture/{name}")

    def count(self, fragment: str) -> int:
        with self._lock:
            return sum(1 for path in self.requests if fragment in path)

    def count_finished(self, fragment: str) -> int:
        with self._lock:
            return sum(1 for path in self.finished if fragment in path)

    @staticmethod
    def send(
        handler: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict[str, str] | None = None
    ) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "text/html; charset=utf-8")
        handler.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(body)

    def route(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        path, query = parts.path, parse_qs(parts.query)
        segments = [s for s in path.split("/") if s]
        if segments[:2] == ["s", "fixture"] and len(segments) == 3:
            name = segments[2]
            for folder in (LABELLED, UNLABELLED):
                if name.endswith(".html") and (folder / name).is_file() and "/" not in name:
                    return self.send(handler, 200, (folder / name).read_bytes())
            return self.send(handler, 404, b"<html><body>no such page</body></html>")
        if segments[:2] == ["s", "fixture-cdn"] and len(segments) == 3:
            # A saved page whose image CDN is the loopback CDN server (the page is otherwise as saved).
            page = (
                (LABELLED / segments[2]) if (LABELLED / segments[2]).is_file() else UNLABELLED / segments[2]
            )
            if "/" in segments[2] or not page.is_file():
                return self.send(handler, 404, b"<html><body>no such page</body></html>")
            raw = page.read_bytes()
            for cdn in (b"https://mmbiz.qpic.cn", b"http://mmbiz.qpic.cn"):
                raw = raw.replace(cdn, self.cdn_base.encode())
            return self.send(handler, 200, raw)
        if path == "/s/gallery":
            # ``src`` values as given, or ``count`` distinct CDN pictures.
            count = int(query.get("count", ["0"])[0])
            sources = query.get("src", []) + [
                f"{self.cdn_base}/mmbiz_png/pic{n}/640?wx_fmt=png&from=appmsg" for n in range(count)
            ]
            return self.send(handler, 200, gallery_page(query.get("title", ["Gallery"])[0], sources))
        if segments[:2] == ["s", "article"] and len(segments) == 3:
            delay = float(query.get("delay_ms", ["0"])[0]) / 1000
            time.sleep(delay)
            title = query.get("title", [f"Article {segments[2]}"])[0]
            return self.send(handler, 200, generated_article(title))
        if segments[:2] == ["s", "flaky"] and len(segments) == 4:
            key, failures = segments[2], int(segments[3])
            with self._lock:
                seen = self._flaky_counts.get(key, 0)
                self._flaky_counts[key] = seen + 1
            if seen < failures:
                return self.send(handler, 503, b"busy")
            return self.send(handler, 200, generated_article(f"Flaky {key}"))
        if path == "/s/redirect":
            return self.send(handler, 302, b"", {"Location": query["to"][0]})
        if path == "/s/hang":
            self._closing.wait(float(query.get("seconds", ["2"])[0]))
            return self.send(handler, 200, generated_article("Too late"))
        if path == "/s/big":
            return self._send_big(handler)
        if path == "/s/trickle":
            return self._trickle(handler, float(query.get("every_ms", ["200"])[0]) / 1000, "headers" in query)
        if path == "/s/js-only":
            return self.send(handler, 200, JS_ONLY_PAGE)
        if path == "/s/gone":
            return self.send(handler, 404, b"<html><body><p>Not Found</p></body></html>")
        if path == "/mp/wappoc_appmsgcaptcha":
            return self.send(
                handler,
                200,
                (LABELLED / "verify_captcha_secitptpage.html").read_bytes()
                if LABELLED.is_dir()
                else b"<html></html>",
            )
        if path.startswith("/outside/"):
            return self.send(handler, 200, generated_article("Outside the prefix"))
        return self.send(handler, 404, b"<html><body>not found</body></html>")

    @staticmethod
    def _send_big(handler: BaseHTTPRequestHandler) -> None:
        """A page that never says its length and goes on past any sane cap."""
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html; charset=utf-8")
        handler.send_header("Connection", "close")
        handler.end_headers()
        chunk = b"<p>" + b"x" * 65_000 + b"</p>"
        for _ in range(200):  # about 13 MB unless the client hangs up first
            handler.wfile.write(chunk)

    def _trickle(self, handler: BaseHTTPRequestHandler, every_s: float, in_headers: bool) -> None:
        """A page that comes one byte at a time (in the headers, or in the body), for at most 20 s."""
        self.trickle_started.set()
        page = generated_article("Trickled")
        head = (
            f"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
            f"Content-Length: {len(page)}\r\n\r\n"
        ).encode()
        data = head + page
        sent = 0 if in_headers else len(head)
        stop = time.monotonic() + 20
        try:
            if not in_headers:
                handler.wfile.write(head)
                handler.wfile.flush()
            while sent < len(data) and time.monotonic() < stop:
                handler.wfile.write(data[sent : sent + 1])
                handler.wfile.flush()
                sent += 1
                time.sleep(every_s)
        except OSError:  # the client hung up
            with self._lock:
                self.hung_up.append(handler.path)
            self.hang_up_seen.set()

    def release_hangs(self) -> None:
        """Answer every ``/s/hang`` now (they wait for this or their ``seconds``)."""
        self._closing.set()

    def __enter__(self) -> ArticleServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def image_settings(server: ArticleServer, cdn: CdnServer, **overrides: Any) -> dict[str, Any]:
    """Settings whose doors are the local article server and, for images, the loopback CDN."""
    server.cdn_base = cdn.base
    return plugin_settings(server, image_url_prefixes=[cdn.base + "/"], **overrides)


def plugin_settings(server: ArticleServer, **overrides: Any) -> dict[str, Any]:
    """Settings whose only door is the local server."""
    settings: dict[str, Any] = {
        "allowed_url_prefixes": [server.prefix],
        "retry_backoff_ms": 20,
        "chromium_path": "/nonexistent/chromium",
    }
    settings.update(overrides)
    return {"wechat": settings}


@asynccontextmanager
async def wechat_client(
    data_dir: Path,
    root: Path,
    *,
    settings: dict[str, Any] | None = None,
    language: str = "en",
    **client_options: Any,
) -> Any:
    async with in_memory_client(
        ["wechat"],
        data_dir=data_dir,
        config={"language": language, "allowed_roots": [str(root)]},
        settings=settings,
        cwd=root,
        **client_options,
    ) as client:
        yield client
