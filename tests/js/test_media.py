"""``audio``, ``generatedImage`` and data-only images, as the reference has them.

Ports of openai/codex ``codex-rs/code-mode-runtime/src/service_tests.rs`` at commit
4f39251a010a (``output_helpers_return_undefined``,
``audio_helper_accepts_audio_url_object_and_raw_mcp_audio_block``,
``audio_helper_rejects_non_data_urls``, ``generated_image_helper_appends_image_and_output_hint``,
``image_helpers_reject_remote_urls``, ``image_helpers_reject_invalid_image_outputs``; audio
came with 643de86a190a, data-only images with c09df9e35319, ``generatedImage`` with
12e8764a9c61), and of ``service_audio_tests.rs`` (the short-WAV rule, newer than
4f39251a010a: the upstream file as stored at commit ce5162ca79f9).
"""

from __future__ import annotations

import base64
import json
import struct

import pytest
import trio

from code_mode import Audio, CellId, Completed, Image, ImageDetail, Text, YieldAfter, Yielded

from ..helpers import pcm16_wav
from ..js_support import SAFETY, run, run_in, session, texts

REMOTE = (
    "Tool call failed: remote image URLs are not supported in tool outputs. Pass a base64 "
    "data URI instead"
)
INVALID_IMAGE = "Tool call failed: invalid image output. Pass a base64 data URI instead"
INVALID_AUDIO = "Tool call failed: invalid audio output. Pass a base64 data URI instead"
AUDIO_EXPECTS = (
    "audio expects a non-empty audio URL string, an object with audio_url, or a raw MCP audio block"
)
SHORT = "Audio output omitted because the clip is shorter than 25 ms; use a longer clip."


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


async def test_output_helpers_return_undefined(isolation: str) -> None:
    source = (
        "const returnsUndefined = [\n"
        '  text("first"),\n'
        '  image("data:image/png;base64,AAA"),\n'
        '  audio("data:audio/wav;base64,YXVkaW8="),\n'
        '  notify("ping"),\n'
        "].map((value) => value === undefined);\n"
        "text(JSON.stringify(returnsUndefined));"
    )
    assert await run(isolation, source) == Completed(
        [
            Text("first"),
            Image("data:image/png;base64,AAA", ImageDetail.HIGH),
            Audio("data:audio/wav;base64,YXVkaW8="),
            Text("[true,true,true,true]"),
        ]
    )


async def test_audio_helper_accepts_audio_url_object_and_raw_mcp_audio_block(
    isolation: str,
) -> None:
    source = (
        'audio({ audio_url: "data:audio/mpeg;base64,YXVkaW8=" });\n'
        'audio({ type: "audio", data: "YXVkaW8=", mimeType: "audio/wav" });\n'
        'audio({ type: "audio", data: "data:audio/ogg;base64,T2dn", mime_type: "x" });\n'
        'audio({ type: "audio", data: "YXVkaW8=" });'
    )
    assert await run(isolation, source) == Completed(
        [
            Audio("data:audio/mpeg;base64,YXVkaW8="),
            Audio("data:audio/wav;base64,YXVkaW8="),
            Audio("data:audio/ogg;base64,T2dn"),
            Audio("data:application/octet-stream;base64,YXVkaW8="),
        ]
    )


@pytest.mark.parametrize(
    "source",
    [
        'audio("https://example.com/audio.wav");',
        'audio({ audio_url: "file:///tmp/audio.wav" });',
        'audio("no scheme at all");',
    ],
)
async def test_audio_helper_rejects_non_data_urls(source: str, isolation: str) -> None:
    assert await run(isolation, source) == Completed([], INVALID_AUDIO)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("audio();", AUDIO_EXPECTS),
        ('audio("");', AUDIO_EXPECTS),
        ("audio([1]);", AUDIO_EXPECTS),
        ("audio({ audio_url: 5 });", AUDIO_EXPECTS),
        ("audio({});", AUDIO_EXPECTS),
        (
            'audio({ type: "image", data: "AAA" });',
            'audio only accepts MCP audio blocks, got "image"',
        ),
        ('audio({ type: "audio" });', "audio expected MCP audio data"),
        ('audio({ type: "audio", data: "" });', "audio expected MCP audio data"),
    ],
)
async def test_audio_helper_errors_are_plain_strings(
    source: str, message: str, isolation: str
) -> None:
    program = f"try {{ {source} }} catch (e) {{ text(typeof e); text(e); }}"
    assert await run(isolation, program) == texts("string", message)


# (sample rate, frames, omitted): upstream's audio_helper_omits_short_wav_in_all_input_forms
WAV_ROWS = [
    (24_000, 0, True),
    (24_000, 1, True),
    (24_000, 599, True),
    (24_000, 600, False),
    (24_000, 601, False),
    (44_100, 223, True),
    (44_100, 1_102, True),
    (44_100, 1_103, False),
    (30_870, 223, True),
    (30_870, 771, True),
    (30_870, 772, False),
    (34_398, 221, True),
    (34_398, 859, True),
    (34_398, 860, False),
]


async def test_audio_helper_omits_short_wav_in_all_input_forms(isolation: str) -> None:
    """Each row in the three input forms: a URL, ``{audio_url}``, a raw MCP block."""
    lines = []
    expected: list[Text | Audio] = []
    for sample_rate, frames, omitted in WAV_ROWS:
        payload = b64(pcm16_wav(sample_rate, frames))
        url = f"data:audio/wav;base64,{payload}"
        lines.append(
            f"audio({json.dumps(url)}); audio({{audio_url: {json.dumps(url)}}});"
            f' audio({{type: "audio", mimeType: "audio/wav", data: {json.dumps(payload)}}});'
        )
        expected += [Text(SHORT) if omitted else Audio(url)] * 3
    assert await run(isolation, "\n".join(lines)) == Completed(expected)


async def test_audio_helper_bounds_wav_data_and_preserves_outputs_after_yield(
    isolation: str,
) -> None:
    """Metadata chunks (LIST, an odd-sized JUNK), a streaming header that claims more
    data than present, and a data chunk that claims less: the clip is measured on the
    bytes actually there. The items keep their place after a yield."""
    metadata_short = bytearray(pcm16_wav(24_000, 1))
    valid = bytearray(pcm16_wav(24_000, 600))
    chunks = b"LIST" + struct.pack("<I", 4 + 8 + 2048) + b"INFOINAM" + struct.pack("<I", 2048)
    chunks += bytes(2048) + b"JUNK\x01\0\0\0x\0"
    for wav in (metadata_short, valid):
        wav[36:36] = chunks
        wav[4:8] = struct.pack("<I", len(wav) - 8)
    truncated = bytearray(pcm16_wav(24_000, 0))
    truncated[4:8] = struct.pack("<I", 48_036)
    truncated[40:44] = struct.pack("<I", 48_000)
    bounded = bytearray(pcm16_wav(24_000, 600))
    bounded[40:44] = struct.pack("<I", 2)
    urls = [
        f"data:audio/wav;base64,{b64(bytes(wav))}"
        for wav in (metadata_short, truncated, bounded, valid)
    ]
    source = (
        "text('before'); await yield_control();\n"
        f"for (const audio_url of {json.dumps(urls)}) audio({{audio_url}}); text('after');"
    )
    async with session(isolation) as runtime:
        assert await run_in(runtime, source) == Yielded([Text("before")])
        with trio.fail_after(SAFETY):
            event = await runtime.observe(CellId("1"), YieldAfter(10 * SAFETY))
    assert event == Completed([Text(SHORT)] * 3 + [Audio(urls[3]), Text("after")])


@pytest.mark.parametrize(
    "url",
    [
        # Not measured, so kept: another format, not base64, not strict base64.
        "data:audio/mpeg;base64," + b64(b"ID3" + bytes(40)),
        "data:audio/wav," + "RIFF%00%00",
        "data:audio/wav;base64," + b64(pcm16_wav(24_000, 1))[:-1] + "B",
        "data:audio/wav;base64," + b64(pcm16_wav(24_000, 1)) + "\n",
    ],
)
async def test_audio_that_cannot_be_measured_is_kept(url: str, isolation: str) -> None:
    assert await run(isolation, f"audio({json.dumps(url)});") == Completed([Audio(url)])


async def test_generated_image_helper_appends_image_and_output_hint(isolation: str) -> None:
    source = (
        "generatedImage({\n"
        '  image_url: "data:image/png;base64,AAA",\n'
        '  output_hint: "generated image save hint",\n'
        "});\n"
        'generatedImage({ image_url: "data:image/png;base64,BBB", detail: "low" });'
    )
    assert await run(isolation, source) == Completed(
        [
            Image("data:image/png;base64,AAA", ImageDetail.HIGH),
            Text("generated image save hint"),
            Image("data:image/png;base64,BBB", ImageDetail.LOW),
        ]
    )


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            'generatedImage("data:image/png;base64,AAA");',
            "generatedImage expects an image generation result object",
        ),
        ("generatedImage();", "generatedImage expects an image generation result object"),
        (
            'generatedImage({ image_url: "data:image/png;base64,AAA", output_hint: 3 });',
            "generatedImage output_hint must be a string when provided",
        ),
        (
            "generatedImage({ output_hint: 'h' });",
            "image expects a non-empty image URL string, an object with image_url and "
            "optional detail, or a raw MCP image block",
        ),
    ],
)
async def test_generated_image_errors(source: str, message: str, isolation: str) -> None:
    program = f"try {{ {source} }} catch (e) {{ text(typeof e); text(e); }}"
    assert await run(isolation, program) == texts("string", message)


@pytest.mark.parametrize("url", ["http://example.com/image.jpg", "https://example.com/image.jpg"])
@pytest.mark.parametrize("helper", ["image", "generatedImage"])
async def test_image_helpers_reject_remote_urls(helper: str, url: str, isolation: str) -> None:
    argument = json.dumps(url) if helper == "image" else f"{{ image_url: {json.dumps(url)} }}"
    assert await run(isolation, f"{helper}({argument});") == Completed([], REMOTE)


@pytest.mark.parametrize(
    "source",
    [
        'image("Error executing tool exec: Expected at least one message to convert to '
        'CallToolResult", "original");',
        'generatedImage({ image_url: "Error executing tool exec: Expected at least one '
        'message to convert to CallToolResult" });',
        'image("ftp://example.com/a.png");',
    ],
)
async def test_image_helpers_reject_invalid_image_outputs(source: str, isolation: str) -> None:
    assert await run(isolation, source) == Completed([], INVALID_IMAGE)


async def test_forward_output_keeps_this_packages_image_rules(isolation: str) -> None:
    """``forward_output`` (ours) follows the same data-only default."""
    source = 'forward_output({ content: [{ type: "input_image", image_url: "https://x" }] });'
    assert await run(isolation, source) == Completed([], REMOTE)
