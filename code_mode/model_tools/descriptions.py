"""The descriptions of the ``exec`` and ``wait`` tools, as the model reads them.

The ``exec`` description is the model's whole manual for code mode: what a program is,
which globals it has, and one TypeScript declaration per nested tool. It is generated
from the enabled tools so it can never disagree with what a program actually sees.
Its parts, joined by a blank line:

1. the guide (how a program runs, the pragma, every global);
2. in deferred mode, how to find tools in ``ALL_TOOLS`` instead of a tool list;
3. ``Shared MCP Types:`` with the MCP result types, once, when any tool returns an MCP
   ``CallToolResult``;
4. unless deferred, the tool reference: for each tool, in the order given, an optional
   ``## <namespace>`` heading when the namespace changes, then ``### `<identifier>` ``
   (plus `` (`<raw name>`)`` when the two differ), the tool's description and its
   declaration in a ``ts`` block.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import attrs

from .._types import ToolDefinition
from .mcp_results import MCP_TYPES_PREAMBLE, is_mcp_call_tool_result
from .typescript import normalize_identifier, tool_declaration

__all__ = [
    "NamespaceDescription",
    "augment_tool_definition",
    "exec_description",
    "tool_heading",
    "tool_reference",
    "tool_sample",
    "wait_description",
]


@attrs.frozen
class NamespaceDescription:
    """How a tool namespace (e.g. one MCP server) is introduced in the tool reference.

    Looked up by the tool's ``ToolName.namespace``. ``name`` is the heading shown
    (``## <name>``); ``description`` the text under it. A namespace with an empty
    description gets no heading: a bare heading would tell the model nothing.
    """

    name: str
    description: str


def tool_sample(tool: ToolDefinition) -> str:
    """A tool's description followed by its TypeScript declaration::

        <description>

        exec tool declaration:
        ```ts
        declare const tools: { <identifier>(args: <In>): Promise<<Out>>; };
        ```

    This is the text a model needs to call the tool from a program. It is used in the
    tool reference and, via :func:`augment_tool_definition`, as the description that
    ``ALL_TOOLS`` carries, so a model that looked a tool up in deferred mode also learns
    its types.
    """
    return f"{tool.description}\n\nexec tool declaration:\n```ts\n{tool_declaration(tool)}\n```"


def augment_tool_definition(tool: ToolDefinition) -> ToolDefinition:
    """Return ``tool`` with its description replaced by :func:`tool_sample`.

    Hosts pass augmented definitions to ``ExecuteRequest.enabled_tools`` so that the
    ``description`` a program reads from ``ALL_TOOLS`` includes the tool's TypeScript
    types; this matters most in deferred mode, where the ``exec`` description lists no
    tools. (Do not feed augmented tools back into :func:`exec_description`: their
    declarations would be shown twice.)
    """
    return attrs.evolve(tool, description=tool_sample(tool))


def tool_heading(tool: ToolDefinition) -> str:
    """``### `<identifier>` ``, plus `` (`<raw name>`)`` when normalisation changed the
    name, so the model can map a tool it knows by name to the property on ``tools``."""
    identifier = normalize_identifier(tool.name)
    if identifier == tool.name:
        return f"### `{identifier}`"
    return f"### `{identifier}` (`{tool.name}`)"


def tool_reference(
    tools: Sequence[ToolDefinition],
    namespace_descriptions: Mapping[str, NamespaceDescription] | None = None,
) -> str:
    """The reference blocks of ``tools``, joined by blank lines (empty for no tools).

    Tools keep the caller's order (the order of ``ALL_TOOLS``). Walking them, a
    ``## <name>\\n<description>`` heading is emitted whenever a tool's namespace entry
    differs from the previous tool's (a tool with no entry counts as "no namespace").
    Keep a namespace's tools contiguous: one that comes back repeats its heading.
    """
    descriptions = namespace_descriptions or {}
    blocks: list[str] = []
    current: str | None = None
    for tool in tools:
        namespace = tool.tool_name.namespace
        entry = descriptions.get(namespace) if namespace is not None else None
        entry_name = entry.name if entry is not None else None
        if entry_name != current:
            if entry is not None and entry.description.strip():
                blocks.append(f"## {entry.name}\n{entry.description.strip()}")
            current = entry_name
        sample = tool_sample(tool).strip()
        heading = tool_heading(tool)
        blocks.append(f"{heading}\n{sample}" if sample else heading)
    return "\n\n".join(blocks)


def exec_description(
    tools: Sequence[ToolDefinition],
    *,
    namespace_descriptions: Mapping[str, NamespaceDescription] | None = None,
    deferred: bool = False,
    code_argument: str | None = None,
    push: bool = False,
) -> str:
    """The description of the ``exec`` tool for the given nested tools.

    ``namespace_descriptions`` maps a ``ToolName.namespace`` to its heading.
    ``deferred=True`` is for large tool sets: instead of a declaration per tool (which
    could run to many thousands of tokens), the description tells the model how to
    search ``ALL_TOOLS`` from inside a program and print only a few matches.
    ``code_argument`` is for hosts without freeform tools (Anthropic, MCP), where
    ``exec`` takes a JSON object: it names the string argument that carries the source,
    and the input instructions are worded for that. ``push=True`` is for hosts that
    give the model a program's result when it finishes (``CodeModeSession(on_finished=
    ...)``): the description then says so, instead of telling it to call ``wait``.
    """
    parts = [_guide(code_argument, push)]
    if deferred:
        parts.append(_deferred_guide(tools, namespace_descriptions or {}))
    if any(is_mcp_call_tool_result(tool.output_schema) for tool in tools):
        parts.append(f"Shared MCP Types:\n```ts\n{MCP_TYPES_PREAMBLE}\n```")
    if not deferred and tools:
        parts.append("# Tools\n\n" + tool_reference(tools, namespace_descriptions))
    return "\n\n".join(parts)


def wait_description(*, push: bool = False, idle_floor_ms: int | None = None) -> str:
    """The description of the ``wait`` tool: when to use it and what its arguments and
    results mean. It names the exact status lines of a result, so that the model
    connects ``Script running with cell ID <id>`` with calling ``wait``.

    ``push=True``: the host gives the model each program's result when it finishes,
    so the description says that ``wait`` is not needed for it. ``idle_floor_ms``: the
    host's idle floor (``CodeModeSession(wait_idle_floor_ms=...)``), which the
    description explains. Without either, it is the reference text."""
    if not push and idle_floor_ms is None:
        return _WAIT
    lines = _WAIT.split("\n")
    if idle_floor_ms is not None:
        at = lines.index(next(line for line in lines if line.startswith("- `yield_time_ms`")))
        lines.insert(at + 1, _IDLE_FLOOR.format(seconds=f"{idle_floor_ms / 1000:g}"))
    if push:
        lines.insert(1, _WAIT_PUSH)
        lines = [line.replace(_WAIT_AGAIN, _WAIT_AGAIN_PUSH) for line in lines]
    return "\n".join(lines)


_RAW_INPUT: Final = (
    "- Send the program as raw JavaScript source: not JSON, not a quoted string, not a "
    "markdown code fence."
)
_JSON_INPUT: Final = (
    "- Put the program's JavaScript source in the `{argument}` argument, as plain source "
    "(no markdown code fence). The pragma below goes on its first line."
)

_GUIDE: Final = """\
Run a JavaScript program that calls tools for you, combines their results and reports \
only what you need. Prefer one program that does a whole task (loops, filtering, \
parallel calls) over many single tool calls.

Input:
{input_rule}
- Optional first line: `// @exec: {{"yield_time_ms": 10000, "max_output_tokens": 1000}}` \
(both fields optional).
  - `yield_time_ms` (default 10000): if the program is still running after this many \
milliseconds, `exec` returns the output so far with `Script running with cell ID <id>`. \
{running_rule}
  - `max_output_tokens` (default 10000): the output token budget; longer output is cut \
in the middle.

How a program runs:
- Each call gets a fresh V8 isolate and runs the source as an ES module: strict mode, \
top-level `await` works, and nothing you declare survives the call (use `store`/`load`).
- Plain ECMAScript only: no Node.js, `require`, `import`, file system or network. Tools \
are the only way to reach the outside world.
- The program ends as soon as its top-level code finishes. Pending timers and promises \
you did not await are dropped, so `await` every call whose result you need.
- Only what you output comes back to you; the value of the last expression does not. An \
uncaught error fails the program (output emitted before it is kept).

Globals:
- `tools.<name>(input): Promise<...>`: call a tool. Names are \
JavaScript identifiers: characters other than letters, digits, `_` and `$` become `_` \
(`my-tool` is `tools.my_tool`). Function tools take an object, freeform tools a string. \
Calls run concurrently, so start several and `await Promise.all([...])`. A failed call \
rejects with an `Error`.
- `ALL_TOOLS: {{ name: string; description: string }}[]`: every tool of `tools`, by \
identifier.
- `text(value: unknown): void`: output a text item; objects and arrays are shown as JSON.
- `console.log(...values: unknown[]): void` (also `info`, `warn`, `error`, `debug`): \
output the values as one text item, separated by spaces.
- `image(url: string | {{ image_url: string; detail?: string }} | ImageContent, detail?: \
"auto" | "low" | "high" | "original"): void`: output an image from an `https://`, \
`http://` or `data:` URL, or an MCP image block (`image(result.content[0])`). Detail \
defaults to "high".
- `forward_output(...results: unknown[]): void`: output the text and image content of \
tool results as they are (strings, MCP `CallToolResult`s, objects with `content_items`, \
single text or image items).
- `notify(value: unknown): void`: send a short progress message to the user right \
away; it is not part of the output.
- `store(key: string, value: unknown): void`, `load(key: string): unknown`: keep JSON \
data for later programs in this session; `load` returns a copy, or `undefined`. Values \
stored by a program are saved when it finishes, not if it is terminated.
- `setTimeout(callback: () => void, delayMs?: number): number`, \
`clearTimeout(id: number): void`: timers. They do not keep the program alive; to \
sleep, `await new Promise(r => setTimeout(r, ms))`.
- `yield_control(): void`: hand the output so far to you now; the program keeps running.
- `exit(): never`: end the program now, successfully, with the output so far."""

_DEFERRED: Final = """\
Some nested tools ({count}) are omitted from this description, but they remain \
available on `tools` and in `ALL_TOOLS`. To find the ones you need, filter `ALL_TOOLS` \
by `name` and `description` from inside a program, and print only a few matches, \
never the whole array:
```js
const hits = ALL_TOOLS.filter(t => /weather|forecast/i.test(`${{t.name}} ${{t.description}}`));
text(hits.slice(0, 5).map(t => `${{t.name}}: ${{t.description}}`).join("\\n\\n"));
```
Then call what you found as `await tools.<name>(...)`."""

_RUNNING: Final = "The program keeps running; call `wait` with that id for more."
_RUNNING_PUSH: Final = (
    "The program keeps running, and you will be given its result when it finishes: end "
    "your turn or do other work meanwhile instead of calling `wait` to poll for it "
    "(`wait` with that id shows its output sooner, or stops it)."
)

_WAIT_PUSH: Final = (
    "- You do not need `wait` to get a program's result: you will be given it when the "
    "program finishes. Use `wait` only to see its output sooner, or to stop it."
)
_WAIT_AGAIN: Final = "(call `wait` again)"
_WAIT_AGAIN_PUSH: Final = "(its result still comes to you when it finishes)"
_IDLE_FLOOR: Final = (
    "- If the program has output nothing new by then, `wait` holds on until it does, "
    "until it ends, or for up to {seconds} seconds in all."
)

_WAIT: Final = """\
Continue, or stop, an `exec` program that is still running.
- Use it only after a result said `Script running with cell ID <id>`.
- `cell_id` (required): that id.
- `yield_time_ms` (default 10000): how long to wait for the program before returning \
with what it has output so far.
- `max_tokens` (default 10000): the output token budget of this call; longer output is \
cut in the middle.
- `terminate: true`: stop the program now instead of waiting.
- The result holds only the output produced since the previous result for this cell, \
then either `Script running with cell ID <id>` again (call `wait` again) or the final \
`Script completed`, `Script failed` or `Script terminated`.
- A finished program's result is returned once; after that its id is unknown \
(`exec cell <id> not found`)."""


def _guide(code_argument: str | None, push: bool) -> str:
    rule = _RAW_INPUT if code_argument is None else _JSON_INPUT.format(argument=code_argument)
    return _GUIDE.format(input_rule=rule, running_rule=_RUNNING_PUSH if push else _RUNNING)


def _deferred_guide(
    tools: Sequence[ToolDefinition], namespace_descriptions: Mapping[str, NamespaceDescription]
) -> str:
    count = f"{len(tools)} tool" + ("" if len(tools) == 1 else "s")
    text = _DEFERRED.format(count=count)
    groups: list[str] = []
    seen: set[str] = set()
    for tool in tools:
        namespace = tool.tool_name.namespace
        entry = namespace_descriptions.get(namespace) if namespace is not None else None
        if entry is None or entry.name in seen:
            continue
        seen.add(entry.name)
        summary = next(
            (line.strip() for line in entry.description.splitlines() if line.strip()), ""
        )
        groups.append(f"- {entry.name}: {summary}" if summary else f"- {entry.name}")
    if groups:
        text += "\nTool groups:\n" + "\n".join(groups)
    return text
