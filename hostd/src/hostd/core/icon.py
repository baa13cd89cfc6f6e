"""hostd's icon: one SVG file (``static/icon.svg``) for the MCP ``serverInfo``, the dashboard's
``<link rel="icon">`` and ``/favicon.ico``, which browsers ask for on every site whatever a page
links. It is public, as a load balancer's probes are: no token, only the guard's Host check.
"""

from __future__ import annotations

import functools
from importlib.resources import files
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

FAVICON_PATH = "/favicon.ico"
#: Where the dashboard's pages link the icon (under its ``/ui`` static files).
ICON_FILE = "icon.svg"


@functools.cache
def icon_svg() -> str:
    """The icon's SVG markup."""
    return (files("hostd.web") / "static" / ICON_FILE).read_text(encoding="utf-8").strip()


async def favicon(request: Request) -> Response:
    from starlette.responses import Response

    return Response(
        icon_svg(), media_type="image/svg+xml", headers={"Cache-Control": "public, max-age=86400"}
    )


def favicon_route() -> Route:
    """``/favicon.ico`` for an app that serves the dashboard at its root's ``/ui``."""
    from starlette.routing import Route

    return Route(FAVICON_PATH, favicon, methods=["GET", "HEAD"])
