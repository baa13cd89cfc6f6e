"""The plugin's settings (``plugins.summary-writer`` in the config) and the tool's answer."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from hostd import ToolOutput

MEBIBYTE = 1024 * 1024

WriteMode = Literal["append", "overwrite"]


class Settings(BaseModel):
    """What a user may tune; every field has a default, so the section may be left out."""

    model_config = ConfigDict(extra="forbid")

    separator_heading: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        pattern=r"^[^\r\n]+$",
        description="Heading of the separator before each appended section; "
        "default follows the language ('总结更新' / 'Summary update')",
    )
    max_content_bytes: int = Field(
        default=MEBIBYTE,
        ge=1,
        le=256 * MEBIBYTE,
        description="Largest content accepted, in bytes of UTF-8 (larger is TOO_LONG)",
    )
    lock_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="How long to wait for another writer of the same file before answering FILE_LOCKED",
    )


class UpdateSummaryOutput(ToolOutput):
    """What ``update_summary`` did; the envelope adds status, message and metadata."""

    file_path: str = Field(description="Absolute path of the file written (symlinks resolved)")
    mode: WriteMode = Field(description="The write mode used")
    bytes_written: int = Field(description="Bytes written by this call, separator included")
    created: bool = Field(description="True when the file did not exist before this call")
    separator_added: bool = Field(description="True when a timestamped separator preceded the content")
