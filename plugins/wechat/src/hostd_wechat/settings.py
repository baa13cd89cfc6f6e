"""The plugin's settings (config section ``plugins.wechat``)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

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
    chromium_path: str = Field(
        default="/usr/bin/chromium", description="The system Chromium for headless fetches."
    )
    default_user_agent: UserAgent = Field(
        default=DEFAULT_USER_AGENT, description="User-Agent header: printable Latin-1 characters."
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
    sampling_prompt_max_chars: int = Field(default=24_000, ge=1_000, le=400_000)
    summary_max_output_chars: int = Field(
        default=2_000_000, ge=1_000, description="Past this a digest is refused with TOO_LONG."
    )

    @field_validator("allowed_url_prefixes", "image_url_prefixes")
    @classmethod
    def _prefixes_parse(cls, value: list[str]) -> list[str]:
        from hostd_wechat.urls import UrlPrefix

        for prefix in value:
            UrlPrefix.parse(prefix)
        return value


def settings_of(value: object) -> Settings:
    """The validated settings, or the defaults when the config has no section."""
    return value if isinstance(value, Settings) else Settings()
