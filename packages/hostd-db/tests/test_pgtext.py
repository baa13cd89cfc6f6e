"""Text with NUL round-trips through the PostgreSQL encoding; plain text passes unchanged."""

from __future__ import annotations

import pytest
from hostd_db.pgtext import decode_text, decoded_tuple_rows, encode_text, qmark_to_pyformat


@pytest.mark.parametrize("text", ["plain 思考", "a\x00b", "\ue000", "\ue000e\x00\ue0000", ""])
def test_text_round_trips_and_stores_no_nul(text: str) -> None:
    encoded = encode_text(text)
    assert isinstance(encoded, str)
    assert "\x00" not in encoded
    assert decode_text(encoded) == text


def test_plain_text_and_other_values_pass_unchanged() -> None:
    assert encode_text("plain") == "plain"
    assert encode_text(3) == 3
    assert decode_text(None) is None
    assert decoded_tuple_rows(None)([encode_text("x\x00"), 1]) == ("x\x00", 1)


def test_placeholders_become_pyformat_and_percent_is_literal() -> None:
    assert qmark_to_pyformat("SELECT ? WHERE a LIKE '5%'") == "SELECT %s WHERE a LIKE '5%%'"
