"""The Model Context Protocol wing: the only part of hostd that imports the MCP SDK.

It adapts the core's call pipeline to the SDK's low-level server (``server``), serves it over
stdio and HTTP (``transports``, ``stdio_pipes``), and carries subscriptions, client logging and
the OAuth resource-server answers (``oauth_resource``).
"""
