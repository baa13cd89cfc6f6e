"""How hostd starts Debian's Chromium headless, shared by the wechat plugin (pages whose scripts
must run) and the test kit (dashboard pages in a real browser), so both run the same browser.

The flags keep it quiet and offline-friendly: no sandbox (it runs inside a container or a test
user), no GPU, no QUIC, no first-run, sync, update or background traffic, and ``/tmp`` in place
of a small ``/dev/shm``.
"""

from __future__ import annotations

#: Where Debian's ``chromium`` package puts the browser.
CHROMIUM_PATH = "/usr/bin/chromium"

#: The command-line flags every headless Chromium hostd starts gets.
CHROMIUM_FLAGS: tuple[str, ...] = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
