"""The plugin's two tools, one module each: ``read`` (articles to Markdown files) and ``digest``
(one digest file for a set of Markdown articles). The work they orchestrate lives beside them
in the package, one module per responsibility."""
