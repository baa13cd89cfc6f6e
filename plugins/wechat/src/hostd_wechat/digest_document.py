"""The digest document: a title line, contents, one section per article and a manifest table.

It is written in the digest's own language (the ``language`` argument, or the one its articles
are mostly in), which need not be the server's, so its labels are ``Text`` rendered here.
Section anchors follow GitHub's rule, so the contents' links work where the file is read.
"""

from __future__ import annotations

import unicodedata

from hostd import Text
from hostd_wechat.extractive import cjk_share
from hostd_wechat.models import SectionOverview
from hostd_wechat.sources import SourceArticle

LABELS: dict[str, Text] = {
    "digest": Text(en="Article digest", zh="文章汇总"),
    "generated": Text(en="Generated", zh="生成时间"),
    "articles": Text(en="Articles", zh="篇数"),
    "contents": Text(en="Contents", zh="目录"),
    "source": Text(en="Source", zh="来源"),
    "account": Text(en="Account", zh="账号"),
    "author": Text(en="Author", zh="作者"),
    "published": Text(en="Published", zh="发布时间"),
    "file": Text(en="File", zh="文件"),
    "manifest": Text(en="Metadata manifest", zh="元数据清单"),
    "title": Text(en="Title", zh="标题"),
    "words": Text(en="Words", zh="字数"),
    "unknown": Text(en="Unknown", zh="未知"),
    "truncated": Text(en=" (truncated)", zh="（已截断）"),
}


def labels_in(language: str) -> dict[str, str]:
    """Every label of the document in ``language``."""
    return {key: text.render(language) for key, text in LABELS.items()}


def digest_language(requested: str, articles: list[SourceArticle]) -> str:
    """``requested`` when it is zh or en; for auto, zh when the articles are mostly Chinese."""
    if requested in ("zh", "en"):
        return requested
    sample = "".join(a.title + " ".join(a.text.sentences[:30]) for a in articles[:200])
    return "zh" if cjk_share(sample) >= 0.3 else "en"


def truncate(text: str, limit: int | None, language: str) -> str:
    """``text`` cut to ``limit`` characters, marked as truncated in ``language``."""
    if limit is None or len(text) <= limit:
        return text
    return text[:limit].rstrip() + LABELS["truncated"].render(language)


def github_anchor(heading: str, used: dict[str, int]) -> str:
    """The anchor GitHub (and most renderers) give a heading; repeats get -1, -2 ..."""
    lowered = heading.strip().lower()
    kept = "".join(
        char for char in lowered if char in " -_" or unicodedata.category(char)[0] in ("L", "N", "M")
    )
    slug = kept.replace(" ", "-")
    count = used.get(slug, 0)
    used[slug] = count + 1
    return slug if count == 0 else f"{slug}-{count}"


def _field(article: SourceArticle, key: str, unknown: str) -> str:
    value = article.metadata.get(key)
    text = " ".join(str(value).split()) if value not in (None, "") else ""
    return text or unknown


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_digest(
    articles: list[SourceArticle], *, language: str, include_toc: bool, include_metadata: bool, generated: str
) -> tuple[str, list[SectionOverview]]:
    """The digest document in ``language`` and the answer's overview of its sections."""
    labels = labels_in(language)
    unknown = labels["unknown"]
    used: dict[str, int] = {}
    github_anchor(labels["digest"], used)
    if include_toc:
        github_anchor(labels["contents"], used)
    headings = [f"{number}. {article.title}" for number, article in enumerate(articles, 1)]
    anchors = [github_anchor(heading, used) for heading in headings]
    out = [
        f"# {labels['digest']}",
        "",
        f"{labels['generated']}: {generated} · {labels['articles']}: {len(articles)}",
        "",
    ]
    if include_toc:
        out += [f"## {labels['contents']}", ""]
        out += [f"- [{_link_text(h)}](#{a})" for h, a in zip(headings, anchors, strict=True)]
        out.append("")
    overview = []
    for article, heading, anchor in zip(articles, headings, anchors, strict=True):
        out += [f"## {heading}", ""]
        if include_metadata:
            source = _field(article, "source_url", "") or _field(article, "canonical_url", "")
            out.append(
                f"- {labels['source']}: "
                + (f"<{source}>" if source.startswith("http") else unknown)
                + f" ({article.path.name})"
            )
            out.append(f"- {labels['account']}: {_field(article, 'account_name', unknown)}")
            out.append(f"- {labels['published']}: {_field(article, 'publish_time', unknown)}")
            out.append("")
        out += [article.summary or f"_{unknown}_", ""]
        overview.append(
            SectionOverview(
                title=article.title,
                source_file=str(article.path),
                anchor=anchor,
                summary_chars=len(article.summary),
            )
        )
    if include_metadata:
        out += [f"## {labels['manifest']}", ""]
        out.append(
            f"| # | {labels['title']} | {labels['account']} | {labels['author']} | {labels['published']} | "
            f"{labels['words']} | {labels['file']} | {labels['source']} |"
        )
        out.append("|---|---|---|---|---|---|---|---|")
        for number, article in enumerate(articles, 1):
            cells = [
                str(number),
                article.title,
                _field(article, "account_name", unknown),
                _field(article, "author", unknown),
                _field(article, "publish_time", unknown),
                _field(article, "word_count", unknown),
                article.path.name,
                _field(article, "source_url", "") or _field(article, "canonical_url", unknown),
            ]
            out.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        out.append("")
    return "\n".join(out), overview


def _link_text(text: str) -> str:
    return text.replace("[", "\\[").replace("]", "\\]")
