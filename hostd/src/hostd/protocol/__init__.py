"""The Model Context Protocol wing: the only part of hostd that imports the MCP SDK.

It adapts the core's call pipeline to the SDK's low-level server (``server``, ``handlers``),
serves it over stdio (``stdio``, ``stdio_pipes``) and HTTP (``http`` behind the ``guard``,
with ``streams`` and ``throttle``), and carries subscriptions, client logging and the OAuth
resource-server answers (``oauth_resource``).
"""
