"""The plugin's settings (config section ``plugins.wechat``) and the answers of its two tools.

The tools' answer models end in ``Output``; their fields become the envelope's top-level fields.
"""

from __future__ import annotations

from typing import Annotated, Literal

from hostd_errors.chromium import CHROMIUM_PATH
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator

from hostd import Text, ToolOutput

DEFAULT_USER_AGENT = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0 Safari/537.36"
)

# An HTTP header value: printable Latin-1 only. No CR/LF (header injection), no other control
# characters (C0, DEL, C1), nothing beyond U+00FF (U+2028 included), which http.client cannot encode.
USER_AGENT_PATTERN = r"^[\x20-\x7e\xa0-\xff]+$"
#: WeChat's image CDN: article images live on mmbiz.qpic.cn, a few (covers, stickers) on mmbiz.qlogo.cn.
DEFAULT_IMAGE_PREFIXES = ("https://mmbiz.qpic.cn/", "https://mmbiz.qlogo.cn/")
UserAgent = Annotated[str, Field(min_length=1, max_length=512, pattern=USER_AGENT_PATTERN)]


class Settings(BaseModel):
    """How the plugin fetches articles and writes summaries."""

    model_config = ConfigDict(extra="forbid")

    allowed_url_prefixes: list[str] = Field(
        default_factory=lambda: ["https://mp.weixin.qq.com/s"],
        min_length=1,
        description="URLs (and redirect targets) must match one of these: same scheme, host and port, "
        "path under the prefix's path.",
    )
    max_response_bytes: int = Field(
        default=20 * 1024 * 1024, ge=1024, description="Pages larger than this are refused."
    )
    max_retries: int = Field(default=2, ge=0, le=2, description="Retries after a 5xx answer or a timeout.")
    retry_backoff_ms: int = Field(
        default=500, ge=0, le=10_000, description="First retry delay; doubles each time."
    )
    chromium_path: str = Field(default=CHROMIUM_PATH, description="The system Chromium for headless fetches.")
    default_user_agent: UserAgent = Field(
        default=DEFAULT_USER_AGENT, description="User-Agent header: printable Latin-1 characters."
    )
    proxy: str | None = Field(
        default=None,
        description="The HTTP proxy pages and images are fetched through: unset follows HTTP_PROXY, "
        "HTTPS_PROXY, ALL_PROXY and NO_PROXY; 'off' ignores them; an http:// or https:// URL "
        "replaces the first three (NO_PROXY still applies).",
    )
    use_sampling: Literal["auto", "never"] = Field(
        default="auto", description="auto: let the client's model write summaries when it offers sampling."
    )
    image_url_prefixes: list[str] = Field(
        default_factory=lambda: list(DEFAULT_IMAGE_PREFIXES),
        description="images: local downloads only images (and redirect targets) under these prefixes; "
        "an http:// image link is fetched over https:// when only that is listed.",
    )
    max_image_bytes: int = Field(
        default=16 * 1024 * 1024, ge=1024, description="An image larger than this stays remote."
    )
    max_images_per_article: int = Field(
        default=200, ge=1, le=10_000, description="Images past this count in one article stay remote."
    )
    max_image_bytes_per_article: int = Field(
        default=256 * 1024 * 1024,
        ge=1024,
        description="Once an article's images reach this many bytes, the rest stay remote.",
    )
    # Limits are spelled ``max_<what>_<unit>``; the first spellings stay accepted (configs in use).
    max_sampling_prompt_chars: int = Field(
        default=24_000,
        ge=1_000,
        le=400_000,
        validation_alias=AliasChoices("max_sampling_prompt_chars", "sampling_prompt_max_chars"),
        description="Cap of the one sampling prompt (was sampling_prompt_max_chars).",
    )
    max_digest_chars: int = Field(
        default=2_000_000,
        ge=1_000,
        validation_alias=AliasChoices("max_digest_chars", "summary_max_output_chars"),
        description="Past this a digest is refused with TOO_LONG (was summary_max_output_chars).",
    )

    @field_validator("proxy")
    @classmethod
    def _proxy_is_a_url_or_off(cls, value: str | None) -> str | None:
        from urllib.parse import urlsplit

        if value is None or value == "off":
            return value
        try:
            parts = urlsplit(value.strip())
            parts.port  # noqa: B018 (a port that is not a number raises here)
        except ValueError:
            raise ValueError(f"proxy: not a URL: {value!r}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                "proxy: an http:// or https:// URL such as http://proxy.example:3128, or 'off' "
                "(unset: the HTTP_PROXY/HTTPS_PROXY/NO_PROXY environment variables)"
            )
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ValueError("proxy: scheme, host and port only, such as http://proxy.example:3128")
        return value.strip()

    @field_validator("allowed_url_prefixes", "image_url_prefixes")
    @classmethod
    def _prefixes_parse(cls, value: list[str]) -> list[str]:
        from hostd_wechat.urls import UrlPrefix

        for prefix in value:
            UrlPrefix.parse(prefix)
        return value


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
    warning: Text | None = Field(default=None, exclude_if=_is_none)


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
    hint: Text | None = Field(default=None, exclude_if=_is_none)
    preview_snippet: str | None = Field(default=None, exclude_if=_is_none)
    images: ArticleImages | None = Field(default=None, exclude_if=_is_none)


class ReadArticlesOutput(ToolOutput):
    """What ``read_wechat_articles`` did: the counts and one item per URL, in the order given."""

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
    message: Text


class SummarizeOutput(ToolOutput):
    """What ``summarize_articles`` wrote, and what it skipped or warned about."""

    saved: bool
    path: str
    bytes_written: int
    article_count: int
    summarizer: Literal["extractive", "sampling"]
    warnings: list[Text]
    errors: list[FileProblem]
    sections_overview: list[SectionOverview] | None = Field(default=None, exclude_if=_is_none)
    preview_snippet: str | None = Field(default=None, exclude_if=_is_none)
