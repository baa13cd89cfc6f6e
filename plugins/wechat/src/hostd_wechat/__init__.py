"""hostd plugin: WeChat articles to Markdown, and digests of Markdown folders."""
