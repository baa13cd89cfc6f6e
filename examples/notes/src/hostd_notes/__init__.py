"""hostd example plugin ``notes``: a template for plugins with a table (README, "Writing a plugin")."""
