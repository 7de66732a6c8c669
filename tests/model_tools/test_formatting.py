"""Result formatting: header, status, error item, truncation to the token budget."""

from __future__ import annotations

import pytest

from code_mode import (
    CellEvent,
    CellId,
    Completed,
    Image,
    ImageDetail,
    MissingCell,
    OutputItem,
    Pending,
    Terminated,
    Text,
    Yielded,
)
from code_mode.model_tools.formatting import (
    IMAGE_TOKEN_COST,
    estimate_tokens,
    format_result,
    result_succeeded,
    truncate_output,
)

PNG = "data:image/png;base64,iVBORw0KGgo="


@pytest.mark.parametrize(
    ("event", "status"),
    [
        (Yielded([Text("a")]), "Script running with cell ID 7"),
        (Pending([Text("a")], ["tool-1"]), "Script running with cell ID 7"),
        (Completed([Text("a")]), "Script completed"),
        (Completed([Text("a")], error_text="Error: boom"), "Script failed"),
        (Terminated([Text("a")]), "Script terminated"),
    ],
)
def test_status_and_exact_header(event: CellEvent, status: str) -> None:
    items = format_result(event, wall_time=12.34, cell_id=CellId("7"))
    assert items[0] == Text(f"{status}\nWall time 12.3 seconds\nOutput:\n")
    assert items[1] == Text("a")


def test_wall_time_has_one_decimal() -> None:
    def header(seconds: float) -> str:
        first = format_result(Completed([]), wall_time=seconds, cell_id="1")[0]
        assert isinstance(first, Text)
        return first.text

    assert header(0) == "Script completed\nWall time 0.0 seconds\nOutput:\n"
    assert header(10.04) == "Script completed\nWall time 10.0 seconds\nOutput:\n"
    assert header(9.96) == "Script completed\nWall time 10.0 seconds\nOutput:\n"
    assert header(123.456) == "Script completed\nWall time 123.5 seconds\nOutput:\n"


def test_completed_keeps_items_in_order() -> None:
    image = Image(PNG, ImageDetail.LOW)
    items = format_result(Completed([Text("a"), image, Text("b")]), wall_time=1, cell_id="1")
    assert items == [
        Text("Script completed\nWall time 1.0 seconds\nOutput:\n"),
        Text("a"),
        image,
        Text("b"),
    ]


def test_failure_appends_error_item() -> None:
    event = Completed([Text("before")], error_text="Error: boom\n    at exec_main.mjs:1:7")
    assert format_result(event, wall_time=0.5, cell_id="1") == [
        Text("Script failed\nWall time 0.5 seconds\nOutput:\n"),
        Text("before"),
        Text("Script error:\nError: boom\n    at exec_main.mjs:1:7"),
    ]
    assert not result_succeeded(event)


def test_empty_error_text_is_still_a_failure() -> None:
    items = format_result(Completed([], error_text=""), wall_time=0, cell_id="1")
    assert items == [
        Text("Script failed\nWall time 0.0 seconds\nOutput:\n"),
        Text("Script error:\n"),
    ]


def test_missing_cell() -> None:
    message = str(MissingCell(CellId("9")))
    assert message == "exec cell 9 not found"
    assert format_result(message, wall_time=0.04, cell_id="9") == [
        Text("Script failed\nWall time 0.0 seconds\nOutput:\n"),
        Text("Script error:\nexec cell 9 not found"),
    ]
    assert not result_succeeded(message)


def test_success_flags() -> None:
    assert result_succeeded(Yielded([]))
    assert result_succeeded(Pending([], []))
    assert result_succeeded(Terminated([]))
    assert result_succeeded(Completed([]))


def test_estimates() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2
    assert estimate_tokens("é") == 1  # 2 bytes
    assert estimate_tokens("😀😀") == 2  # 8 bytes
    assert IMAGE_TOKEN_COST == 765


def test_fitting_output_is_unchanged() -> None:
    items: list[OutputItem] = [Text("a" * 40), Image(PNG), Text("b" * 40)]
    assert truncate_output(items, 20 + IMAGE_TOKEN_COST) == items
    text_only: list[OutputItem] = [Text("x" * 400)]
    assert truncate_output(text_only, 100) == text_only
    assert (
        format_result(Completed(text_only), wall_time=0, cell_id="1", max_output_tokens=100)[1:]
        == text_only
    )


def test_many_tiny_items_that_fit_when_joined_are_unchanged() -> None:
    # Per-item estimates round up (100 x 1 token) but the joined text is 199 bytes.
    items: list[OutputItem] = [Text("a")] * 100
    assert truncate_output(items, 60) == items


def _only_text(items: list[OutputItem]) -> str:
    assert len(items) == 1
    assert isinstance(items[0], Text)
    return items[0].text


WARNING_10 = "Warning: truncated output (original token count: 10)"


def test_all_text_is_cut_exactly_as_the_reference_cuts_it() -> None:
    """Upstream ``truncated_text_output_starts_with_warning``
    (codex-rs/core/src/tools/code_mode/mod.rs) and
    ``code_mode_exec_outer_limit_truncates_emitted_output`` /
    ``code_mode_exec_nested_limit_formats_truncated_result_with_warning``
    (codex-rs/core/tests/suite/code_mode.rs), openai/codex commit 4f39251a010a (the
    warning came with 952656356a1e, "Warn clearly when code mode output is truncated").
    The line-aligned cut of earlier versions of this package is gone."""
    out = truncate_output([Text("0123456789012345678901234567890123456789")], 5)
    assert out == [
        Text(
            "Warning: truncated output (original token count: 10)\n"
            "Total output lines: 1\n\n"
            "0123456789…5 tokens truncated…0123456789"
        )
    ]


def test_all_text_halves_the_budget_bytes_between_head_and_tail() -> None:
    lines = [f"line {i:03d}: " + "x" * 30 for i in range(200)]
    items: list[OutputItem] = [Text(line) for line in lines]
    joined = "\n".join(lines)
    out = _only_text(truncate_output(items, 200))
    header = f"Warning: truncated output (original token count: {-(-len(joined) // 4)})\n"
    assert out == (
        header
        + "Total output lines: 200\n\n"
        + joined[:400]
        + f"…{-(-(len(joined) - 800) // 4)} tokens truncated…"
        + joined[-400:]
    )


def test_all_text_includes_error_and_counts_lines_of_joined_text() -> None:
    event = Completed([Text("a\nb"), Text("c" * 4000)], error_text="Error: boom")
    items = format_result(event, wall_time=0, cell_id="1", max_output_tokens=100)
    assert items[0] == Text("Script failed\nWall time 0.0 seconds\nOutput:\n")
    out = _only_text(items[1:])
    # "a", "b", the c line, "Script error:", "Error: boom"
    assert out.startswith(
        "Warning: truncated output (original token count: 1008)\nTotal output lines: 5\n\na\nb\n"
    )
    assert out.endswith("\nScript error:\nError: boom")


def test_all_text_never_splits_a_character() -> None:
    text = "é" * 1000 + "😀" * 1000
    out = _only_text(truncate_output([Text(text)], 50))
    body = out.split("\n\n", 1)[1]
    head, rest = body.split("…", 1)
    _, tail = rest.split("…", 1)
    assert head == "é" * 50 and tail == "😀" * 25


def test_zero_budget_leaves_only_the_fixed_parts() -> None:
    out = _only_text(truncate_output([Text("abcd" * 10)], 0))
    assert out == WARNING_10 + "\nTotal output lines: 1\n\n…10 tokens truncated…"


def _warning_then(out: list[OutputItem]) -> list[OutputItem]:
    """``out`` without its first item, which must be the truncation warning."""
    assert isinstance(out[0], Text)
    assert out[0].text.startswith("Warning: truncated output (original token count: ")
    return out[1:]


def test_images_are_never_cut_and_omissions_are_counted() -> None:
    first, last = Image(PNG, ImageDetail.HIGH), Image("https://example.com/a.png")
    items: list[OutputItem] = [Text("a" * 3000), first, Text("b" * 3000), last, Text("c" * 3000)]
    out = _warning_then(truncate_output(items, 1500))
    assert [type(item) for item in out] == [Text, Text, Text]
    head, marker, tail = out
    assert isinstance(head, Text) and isinstance(marker, Text) and isinstance(tail, Text)
    assert set(head.text) == {"a"} and set(tail.text) == {"c"}
    dropped = (9000 - len(head.text) - len(tail.text) + 3) // 4
    assert marker.text == f"…{dropped} tokens truncated, 2 images omitted…"


def test_boundary_image_is_kept_when_it_fits_the_whole_budget() -> None:
    image = Image(PNG)
    items: list[OutputItem] = [image, Text("x" * 8000), Text("end")]
    budget = 2 * IMAGE_TOKEN_COST  # the image is over half the budget
    out = _warning_then(truncate_output(items, budget))
    assert out[0] == image
    assert isinstance(out[1], Text) and out[1].text.endswith(" tokens truncated…")
    assert isinstance(out[2], Text) and set(out[2].text) == {"x"}
    assert out[3] == Text("end")
    total = sum(estimate_tokens(i.text) if isinstance(i, Text) else IMAGE_TOKEN_COST for i in out)
    assert total <= budget


def test_text_cut_at_both_ends_around_images() -> None:
    image = Image(PNG)
    items: list[OutputItem] = [Text("head"), image, Text("x" * 20_000), image, Text("tail")]
    out = _warning_then(truncate_output(items, 4000))
    assert out[:2] == [Text("head"), image]
    assert isinstance(out[2], Text) and set(out[2].text) == {"x"}
    assert isinstance(out[3], Text) and out[3].text.startswith("…")
    assert isinstance(out[4], Text) and set(out[4].text) == {"x"}
    assert out[5:] == [image, Text("tail")]
    removed = 20_000 - len(out[2].text) - len(out[4].text)
    assert out[3] == Text(f"…{-(-removed // 4)} tokens truncated…")


def test_only_images_dropped() -> None:
    items: list[OutputItem] = [Text("start"), Image(PNG), Image(PNG), Text("end")]
    assert truncate_output(items, 100) == [
        Text(f"Warning: truncated output (original token count: {2 * IMAGE_TOKEN_COST + 3})"),
        Text("start"),
        Text("…2 images omitted…"),
        Text("end"),
    ]
    assert _warning_then(truncate_output([Text("s"), Image(PNG)], 30)) == [
        Text("s"),
        Text("…1 image omitted…"),
    ]


def test_mixed_error_item_survives_in_the_tail() -> None:
    event = Completed([Image(PNG), Text("y" * 20_000)], error_text="Error: late")
    items = format_result(event, wall_time=1, cell_id="1", max_output_tokens=1000)
    assert items[1] == Text("Warning: truncated output (original token count: 5772)")
    assert items[2] == Image(PNG)
    assert items[-1] == Text("Script error:\nError: late")
