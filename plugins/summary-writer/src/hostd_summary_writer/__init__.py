"""hostd plugin ``summary-writer``: the ``update_summary`` tool, which appends an AI-written
summary to a Markdown file (or replaces the file) inside the user's allowed folders."""
