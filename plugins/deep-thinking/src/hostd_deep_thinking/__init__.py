"""hostd-deep-thinking: sequential thinking with durable sessions, templates, export and diagrams."""
