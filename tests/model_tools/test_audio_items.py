"""Audio items after the program: their token cost, truncation, and the adapters.

The cost follows openai/codex ``codex-rs/utils/audio/src/lib.rs``
(``estimate_audio_token_count``: 10 tokens per second of audio, else the URL's size) and
the over-budget rule of ``codex-rs/utils/output-truncation/src/lib.rs``, commit
4f39251a010a; MCP carries audio as ``AudioContent``, the OpenAI Responses and Anthropic
Messages APIs take none in tool results.
"""

from __future__ import annotations

import base64

from code_mode import Audio, OutputItem, Text
from code_mode.model_tools.adapters import anthropic_content, mcp_content, openai_content
from code_mode.model_tools.audio_tokens import audio_tokens, wav_seconds
from code_mode.model_tools.truncation import truncate_output

from ..helpers import pcm16_wav


def wav(sample_rate: int, frames: int) -> str:
    raw = pcm16_wav(sample_rate, frames)
    return "data:audio/wav;base64," + base64.b64encode(raw).decode("ascii")


def test_a_wav_clip_costs_ten_tokens_a_second() -> None:
    assert wav_seconds(wav(24_000, 24_000)) == 1.0
    assert audio_tokens(wav(24_000, 24_000)) == 10
    assert audio_tokens(wav(24_000, 36_001)) == 16  # 1.5 s and a frame: rounded up
    assert audio_tokens(wav(24_000, 0)) == 0


def test_other_audio_costs_its_url_as_text() -> None:
    url = "data:audio/mpeg;base64," + "A" * 400
    assert wav_seconds(url) is None
    assert audio_tokens(url) == -(-len(url) // 4)
    assert wav_seconds("data:audio/wav;base64,UklGRg==") is None  # too short a header
    assert wav_seconds("data:audio/wav;base64,UklGRh==") is None  # stray bits: not strict


def test_audio_over_the_budget_is_dropped_and_counted() -> None:
    clip = Audio(wav(8_000, 8_000 * 60))  # a minute: 600 tokens
    items: list[OutputItem] = [Text("start"), clip, Text("end")]
    assert truncate_output(items, 700) == items
    assert truncate_output(items, 100) == [
        Text("Warning: truncated output (original token count: 603)"),
        Text("start"),
        Text("…1 audio clip omitted…"),
        Text("end"),
    ]


def test_mcp_content_carries_audio() -> None:
    assert mcp_content([Audio("data:audio/wav;base64,YXVkaW8=")]) == [
        {"type": "audio", "data": "YXVkaW8=", "mimeType": "audio/wav"}
    ]
    assert mcp_content([Audio("data:audio/wav,raw%21")]) == [
        {"type": "audio", "data": base64.b64encode(b"raw!").decode(), "mimeType": "audio/wav"}
    ]
    assert mcp_content([Audio("data:broken")]) == [
        {"type": "text", "text": "[audio omitted: malformed data URL]"}
    ]


def test_openai_and_anthropic_get_a_note_instead() -> None:
    note = "[audio omitted: audio/wav, 5 bytes; this API takes no audio in tool results]"
    items: list[OutputItem] = [Audio("data:audio/wav;base64,YXVkaW8=")]
    assert openai_content(items) == [{"type": "input_text", "text": note}]
    assert anthropic_content(items) == [{"type": "text", "text": note}]
