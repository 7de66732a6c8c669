"""The fixed texts of the ``exec`` and ``wait`` descriptions: the reference's own.

Models are tuned on the reference's descriptions (openai/codex
``codex-rs/code-mode-protocol/src/description.rs``, commit 4f39251a010a:
``EXEC_DESCRIPTION_TEMPLATE``, ``DEFERRED_NESTED_TOOLS_GUIDANCE``,
``WAIT_DESCRIPTION_TEMPLATE``), so they are kept word for word, as lists of lines that
:mod:`.descriptions` joins. What differs, and why:

* ``console`` exists here, so the template's "no console" is dropped and ``console``
  and ``forward_output``, which the reference does not have, are documented after the
  reference's helpers (:data:`EXTRA_HELPERS`);
* where ``exec`` cannot be a free-text tool (Anthropic, MCP) the input line says which
  JSON argument carries the source (:func:`input_line`);
* a description that speaks of no MCP (no tool returns an MCP result) has the
  ``image``, ``audio`` and ``forward_output`` lines without their MCP sentences
  (:data:`WITHOUT_MCP`): a model told of ``ImageContent`` blocks and
  ``codex/imageDetail`` by a host with no MCP tools looks for what is not there;
* in deferred mode, the tools line names no tool and the input line states both
  kinds (:func:`tools_line`, :func:`input_kind_line`): the text then does not change
  with the catalog, so a model's prompt cache survives a catalog change.

A host that adds to the descriptions appends lines to these lists' copies; it never
needs to edit the texts. Push (``on_finished``) and the idle floor do just that, with
the lines at the end of this file.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "DEFERRED_GUIDANCE",
    "EXEC_PUSH",
    "EXTRA_HELPERS",
    "HELPERS",
    "IDLE_FLOOR",
    "IMAGE_HELPER_DETAIL",
    "IMAGE_HELPER_PLAIN",
    "INTRO",
    "TOOL_SEARCH_GUIDANCE",
    "WAIT",
    "WAIT_PUSH",
    "WITHOUT_MCP",
    "YIELD_AGAIN",
    "YIELD_AGAIN_PUSH",
    "input_kind_line",
    "input_line",
    "tools_line",
]

RAW_INPUT: Final = (
    "- Accepts raw JavaScript source text, not JSON, quoted strings, or markdown code fences."
)
JSON_INPUT: Final = (
    "- Put the program's JavaScript source text in the `{argument}` argument, as plain "
    "source, not markdown code fences."
)

TOOLS_LINE: Final = "{tools_line}"
"""Placeholder for :func:`tools_line`: the reference's line with this host's tools as
its examples."""
INPUT_KIND_LINE: Final = "{input_kind_line}"
"""Placeholder for :func:`input_kind_line`."""
IMAGE_HELPER: Final = "{image_helper}"
"""Placeholder for :data:`IMAGE_HELPER_DETAIL` or :data:`IMAGE_HELPER_PLAIN`."""

AUDIO_HELPER: Final = (
    "- `audio(audioUrlOrItem: string | { audio_url: string } | AudioContent)`: Appends an "
    "audio item. `audio_url` should be a base64-encoded `data:` URL. To forward an MCP tool "
    "audio block, pass an individual `AudioContent` block from `result.content`, for "
    "example `audio(result.content[0])`."
)
FORWARD_OUTPUT_HELPER: Final = (
    "- `forward_output(...results: unknown[])`: Appends the text and image content of tool "
    "results as they are: MCP `CallToolResult`s, objects with `content_items`, single text "
    "or image items, or strings."
)

INTRO: Final = (
    "Run JavaScript code to orchestrate/compose tool calls",
    "- Evaluates the provided JavaScript code in a fresh V8 isolate as an async module.",
    TOOLS_LINE,
    INPUT_KIND_LINE,
    "- Nested tools return JSON data (an object, a string, a number, ...), based on the "
    "description.",
    "- Runs raw JavaScript -- no Node, no file system, no network access.",
    RAW_INPUT,
    "- You may optionally start the tool input with a first-line pragma like `// @exec: "
    '{"yield_time_ms": 10000, "max_output_tokens": 1000}`.',
    "- `yield_time_ms` asks `exec` to yield early if the script is still running. Defaults "
    "to {yield_time_ms} ms.",
    "- `max_output_tokens` sets the token budget for direct `exec` results. Defaults to "
    "{max_output_tokens} tokens.",
    "- When the JS code is fully evaluated, the isolate's lifetime ends and unawaited "
    "promises are silently discarded.",
)
"""The template's first paragraph (``{yield_time_ms}``, ``{max_output_tokens}``: the
defaults, substituted by :mod:`.descriptions`)."""

HELPERS: Final = (
    "- Global helpers:",
    "- `exit()`: Immediately ends the current script successfully (like an early return "
    "from the top level).",
    "- `text(value: string | number | boolean | undefined | null)`: Appends a text item. "
    "Non-string values are stringified with `JSON.stringify(...)` when possible.",
    IMAGE_HELPER,
    AUDIO_HELPER,
    "- `generatedImage(result: { image_url: string; output_hint?: string })`: Appends an "
    "image-generation result and its optional output hint. HTTP(S) URLs are not supported.",
    "- `store(key: string, value: any)`: stores a serializable value under a string key for "
    "later `exec` calls in the same session.",
    "- `load(key: string)`: returns the stored value for a string key, or `undefined` if it "
    "is missing.",
    "- `notify(value: string | number | boolean | undefined | null)`: immediately sends "
    "the host a notification for the current `exec` call. Values are stringified like "
    "`text(...)`.",
    "- `setTimeout(callback: () => void, delayMs?: number)`: schedules a callback to run "
    "later and returns a timeout id. Pending timeouts do not keep `exec` alive by "
    "themselves; await an explicit promise if you need to wait for one.",
    "- `clearTimeout(timeoutId?: number)`: cancels a timeout created by `setTimeout`.",
    "- `ALL_TOOLS`: metadata for the enabled nested tools as `{ name, description }` entries.",
    "- `yield_control()`: yields the accumulated output to the model immediately while the "
    "script keeps running.",
)
"""The template's list of helpers, in its order."""

EXTRA_HELPERS: Final = (
    "- `console.log(...values: unknown[])` (also `info`, `warn`, `error`, `debug`): Appends "
    "one text item, the values joined by spaces (strings as they are, others like "
    "`text(...)`).",
    FORWARD_OUTPUT_HELPER,
)
"""This package's helpers beyond the reference's."""

DEFERRED_GUIDANCE: Final = (
    "Some deferred nested tools may be omitted from this description. They are still "
    "available on the global `tools` object and listed in `ALL_TOOLS`.",
    "To find one, filter `ALL_TOOLS` by `name` and `description`.",
    "",
    "Tool availability can change between calls.",
)
"""The reference's ``DEFERRED_NESTED_TOOLS_GUIDANCE`` (ca44e7e9ac60): in every ``exec``
description, so the text stays the same as the tool set changes."""

TOOL_SEARCH_GUIDANCE: Final = (
    'Use `await tools.tool_search({query: "...", limit: 8})` for BM25-ranked discovery of '
    "deferred tools (up to `limit` matches; 8 by default). It returns `{tools: [{name, "
    "description}]}` with callable names and full TypeScript declarations. Print results "
    "with `text()` and inspect unfamiliar declarations before calling "
    "`tools[result.name](arguments)` in a later execution."
)
"""The reference's ``TOOL_SEARCH_GUIDANCE``, word for word: the search tool's own
description, and in deferred mode a paragraph after :data:`DEFERRED_GUIDANCE`."""

IMAGE_HELPER_DETAIL: Final = (
    '- `image(imageUrlOrItem: string | { image_url: string; detail?: "auto" | "low" | '
    '"high" | "original" | null } | ImageContent, detail?: "auto" | "low" | "high" | '
    '"original" | null)`: Appends an image item. `image_url` should be a base64-encoded '
    "`data:` URL. To forward an MCP tool image, pass an individual `ImageContent` block "
    "from `result.content`, for example `image(result.content[0])`. MCP image blocks may "
    'request detail with `_meta: { "codex/imageDetail": "original" }`. When provided, the '
    "second `detail` argument overrides any detail embedded in the first argument."
)
"""The reference's ``LEGACY_IMAGE_HELPER_DESCRIPTION``: for an API whose images carry
a detail level (OpenAI Responses)."""

IMAGE_HELPER_PLAIN: Final = (
    "- `image(imageUrlOrItem: string | { image_url: string } | ImageContent)`: Appends an "
    "image item. `image_url` should be a base64-encoded `data:` URL. To forward an MCP tool "
    "image, pass an individual `ImageContent` block from `result.content`, for example "
    "`image(result.content[0])`."
)
"""The reference's ``UNIFIED_IMAGE_HELPER_DESCRIPTION``: for an API whose images have no
detail level (MCP, Anthropic), where the detail would be dropped."""


WITHOUT_MCP: Final = {
    IMAGE_HELPER_DETAIL: (
        '- `image(imageUrlOrItem: string | { image_url: string; detail?: "auto" | "low" | '
        '"high" | "original" | null }, detail?: "auto" | "low" | "high" | "original" | '
        "null)`: Appends an image item. `image_url` should be a base64-encoded `data:` URL. "
        "When provided, the second `detail` argument overrides any detail embedded in the "
        "first argument."
    ),
    IMAGE_HELPER_PLAIN: (
        "- `image(imageUrlOrItem: string | { image_url: string })`: Appends an image item. "
        "`image_url` should be a base64-encoded `data:` URL."
    ),
    AUDIO_HELPER: (
        "- `audio(audioUrlOrItem: string | { audio_url: string })`: Appends an audio item. "
        "`audio_url` should be a base64-encoded `data:` URL."
    ),
    FORWARD_OUTPUT_HELPER: (
        "- `forward_output(...results: unknown[])`: Appends the text and image content of "
        "tool results as they are: objects with `content_items`, single text or image items, "
        "or strings."
    ),
}
"""The helper lines that name MCP, as a description that speaks of no MCP has them:
the same line less its MCP sentences and types."""


def tools_line(identifiers: list[tuple[str, str]]) -> str:
    """The reference's line on ``tools`` with examples from this host's tools
    (``(identifier, raw name)`` pairs in order): the first tool, then one whose name
    was normalised (else a namespaced one). Without such a tool the example is left
    out, and the normalisation rule is said instead: no example names a tool the host
    lacks."""
    line = "- All nested tools are available on the global `tools` object"
    if identifiers:
        line += f", for example `await tools.{identifiers[0][0]}(...)`."
    else:
        line += "."
    normalized = [ident for ident, raw in identifiers if ident != raw]
    namespaced = [ident for ident, raw in identifiers if "__" in raw]
    examples = normalized or namespaced
    if examples:
        return (
            line + " Tool names are exposed as normalized JavaScript identifiers, for "
            f"example `await tools.{examples[0]}(...)`."
        )
    return (
        line + " Tool names are exposed as normalized JavaScript identifiers (a character "
        "other than a letter, a digit, `_` or `$` becomes `_`)."
    )


def input_kind_line(has_function: bool, has_freeform: bool) -> str:
    """The reference's "take either a string or an object", made true: function tools
    take an object, freeform tools a string."""
    if has_function and has_freeform:
        return (
            "- Nested tool methods take either a string or an object as their input "
            "argument: a string for tools declared `(input: string)`, an object for the "
            "others."
        )
    if has_freeform:
        return "- Nested tool methods take a string as their input argument."
    return "- Nested tool methods take an object as their input argument."


WAIT: Final = (
    "- Use `wait` only after `exec` returns `Script running with cell ID ...`.",
    "- `cell_id` identifies the running `exec` cell to resume.",
    "- `yield_time_ms` controls how long to wait for more output before yielding again. "
    "Defaults to {yield_time_ms} ms.",
    "- `max_tokens` limits how much new output this wait call returns. Defaults to "
    "{max_output_tokens} tokens.",
    "- `terminate: true` stops the running cell; false or omitted waits for output.",
    "- `wait` returns only the new output since the last yield, or the final completion or "
    "termination result for that cell.",
    "- If the cell is still running, `wait` may yield again with the same `cell_id`.",
    "- If the cell has already finished, `wait` returns the completed result and closes the cell.",
)


# Push (CodeModeSession(on_finished=...)): the host gives the model a program's result
# when it finishes, so these lines tell it not to poll. Not the reference's: it has no
# push.
EXEC_PUSH: Final = (
    "- When `exec` yields, the script keeps running, and you will be given its result "
    "when it finishes: end your turn or do other work meanwhile instead of calling `wait` "
    "to poll for it (`wait` with its cell ID shows its output sooner, or stops it)."
)
WAIT_PUSH: Final = (
    "- You do not need `wait` to get a program's result: you will be given it when the "
    "program finishes. Use `wait` only to see its output sooner, or to stop it."
)
YIELD_AGAIN: Final = "may yield again with the same `cell_id`."
YIELD_AGAIN_PUSH: Final = (
    "may yield again with the same `cell_id` (its result still comes to you when it finishes)."
)
IDLE_FLOOR: Final = (
    "- If the program has output nothing new by then, `wait` holds on until it does, "
    "until it ends, or for up to {seconds} seconds in all."
)
"""The idle floor (``CodeModeSession(wait_idle_floor_ms=...)``), after the
``yield_time_ms`` line of ``wait``."""


def input_line(code_argument: str | None) -> str:
    """The input line of the intro: raw source, or the JSON argument that carries it."""
    return RAW_INPUT if code_argument is None else JSON_INPUT.format(argument=code_argument)
