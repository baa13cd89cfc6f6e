"""The answers of the two tools (their fields become the envelope's top-level fields)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from hostd import ToolOutput

#: How many images left remote an item lists by URL (the counts cover them all).
MAX_IMAGE_PROBLEMS = 20


def _is_none(value: object) -> bool:
    return value is None


class BatchSummary(BaseModel):
    total: int
    succeeded: int
    failed: int


class ImageProblem(BaseModel):
    """One image left pointing at its remote URL, and why (see the README's table of reasons)."""

    url: str
    reason: str


class ArticleImages(BaseModel):
    """What ``images: local`` did for one article."""

    found: int = Field(description="Distinct image links in the article.")
    saved: int = Field(description="Images now stored in the folder and linked by relative path.")
    remote: int = Field(description="Images left pointing at their remote URL.")
    bytes_written: int = Field(description="Bytes of the images stored.")
    folder: str | None = Field(
        default=None, description="The article's image folder, when any image is stored."
    )
    problems: list[ImageProblem] = Field(
        default_factory=list,
        description=f"The first {MAX_IMAGE_PROBLEMS} images left remote, with the reason.",
    )
    warning: str | None = Field(default=None, exclude_if=_is_none)


class ArticleItem(BaseModel):
    """One URL's outcome; fields that do not apply are left out of the answer."""

    url: str
    status: Literal["ok", "error"]
    saved_path: str | None = Field(default=None, exclude_if=_is_none)
    title: str | None = Field(default=None, exclude_if=_is_none)
    account_name: str | None = Field(default=None, exclude_if=_is_none)
    bytes_written: int = 0
    strategy: Literal["http", "headless"] | None = Field(default=None, exclude_if=_is_none)
    duration_ms: int | None = Field(default=None, exclude_if=_is_none)
    error_code: str | None = Field(default=None, exclude_if=_is_none)
    reason: str | None = Field(default=None, exclude_if=_is_none)
    hint: str | None = Field(default=None, exclude_if=_is_none)
    preview_snippet: str | None = Field(default=None, exclude_if=_is_none)
    images: ArticleImages | None = Field(default=None, exclude_if=_is_none)


class ReadArticlesResult(ToolOutput):
    summary: BatchSummary
    items: list[ArticleItem]


class SectionOverview(BaseModel):
    title: str
    source_file: str
    anchor: str
    summary_chars: int


class FileProblem(BaseModel):
    path: str
    code: str
    message: str


class SummarizeResult(ToolOutput):
    saved: bool
    path: str
    bytes_written: int
    article_count: int
    summarizer: Literal["extractive", "sampling"]
    warnings: list[str]
    errors: list[FileProblem]
    sections_overview: list[SectionOverview] | None = Field(default=None, exclude_if=_is_none)
    preview_snippet: str | None = Field(default=None, exclude_if=_is_none)
