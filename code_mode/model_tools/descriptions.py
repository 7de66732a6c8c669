"""The descriptions of the ``exec`` and ``wait`` tools, as the model reads them.

The ``exec`` description is the model's whole manual for code mode: what a program is,
which globals it has, and one TypeScript declaration per nested tool. It is generated
from the enabled tools so it can never disagree with what a program actually sees, and
composed as the reference composes it (openai/codex
``codex-rs/code-mode-protocol/src/description.rs``, ``build_exec_tool_description``,
commits 4f39251a010a and ca44e7e9ac60), from the texts of :mod:`.guide_texts`. Its
parts, joined by a blank line:

1. the guide: the reference's template (how a program runs, the pragma, every helper),
   then this package's extra helpers;
2. the reference's note on finding tools in ``ALL_TOOLS`` (always: the text stays the
   same as the tool set changes), plus its tool-search paragraph in deferred mode when
   ``tools.tool_search`` is among the tools;
3. ``Shared MCP Types:`` with the MCP result types, once, when the description speaks
   of MCP (:func:`speaks_mcp`: a tool returns an MCP ``CallToolResult``; in deferred
   mode, by configuration alone);
4. unless deferred, the tool reference: for each tool, in the order given, an optional
   ``## <namespace>`` heading when the namespace changes, then ``### `<identifier>` ``
   (plus `` (`<raw name>`)`` when the two differ), the tool's description and its
   declaration in a ``ts`` block.

A description that speaks of no MCP names no MCP concept at all: the helper lines lose
their MCP sentences (:data:`~.guide_texts.WITHOUT_MCP`). In deferred mode the text
depends on no deferred tool (the reference's ``build_exec_tool_description`` ignores
its deferred tools: openai/codex ``codex-rs/code-mode-protocol/src/description.rs``
and ``description_override_tests.rs``, mirror wallentx/codex-termux ca44e7e9ac60 and
21a6962eac13): no tool is named as an example, both input kinds are described, and
whether MCP is spoken of is configuration, so a catalog change leaves it, and the
model's prompt cache, as it was.

:func:`exec_sections` returns the parts as a list, for a host that adds its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from .._tool_names import normalize_identifier
from .._types import ToolDefinition, ToolKind
from . import guide_texts
from .mcp_results import MCP_TYPES_PREAMBLE, is_mcp_call_tool_result
from .pragma import DEFAULT_MAX_OUTPUT_TOKENS, DEFAULT_YIELD_TIME_MS
from .typescript import tool_declaration

__all__ = [
    "NamespaceDescription",
    "augment_tool_definition",
    "exec_description",
    "exec_sections",
    "speaks_mcp",
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


def augment_tool_definition(
    tool: ToolDefinition,
    namespace_descriptions: Mapping[str, NamespaceDescription] | None = None,
) -> ToolDefinition:
    """Return ``tool`` with its description replaced by :func:`tool_sample`, led by its
    namespace's description when it has one (``<namespace description>\n\n<sample>``),
    as the reference builds what ``ALL_TOOLS`` carries (openai/codex
    ``codex-rs/tools/src/code_mode.rs``, ``collect_code_mode_tool_definitions``).

    Hosts pass augmented definitions to ``ExecuteRequest.enabled_tools`` so that the
    ``description`` a program reads from ``ALL_TOOLS`` includes the tool's TypeScript
    types; this matters most in deferred mode, where the ``exec`` description lists no
    tools. (Do not feed augmented tools back into :func:`exec_description`: their
    declarations would be shown twice.)
    """
    description = tool_sample(tool)
    namespace = tool.tool_name.namespace
    entry = (namespace_descriptions or {}).get(namespace) if namespace is not None else None
    if entry is not None and entry.description.strip():
        description = f"{entry.description.strip()}\n\n{description}"
    return attrs.evolve(tool, description=description)


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
    image_detail: bool = True,
    code_mode_only: bool = False,
    mcp: bool | None = None,
) -> str:
    """The description of the ``exec`` tool for the given nested tools.

    ``namespace_descriptions`` maps a ``ToolName.namespace`` to its heading.
    ``deferred=True`` is for large tool sets: instead of a declaration per tool (which
    could run to many thousands of tokens), the description tells the model to search
    ``ALL_TOOLS`` from inside a program.
    ``code_argument`` is for hosts without freeform tools (Anthropic, MCP), where
    ``exec`` takes a JSON object: it names the string argument that carries the source,
    and the input line is worded for that. ``push=True`` is for hosts that give the
    model a program's result when it finishes (``CodeModeSession(on_finished=...)``):
    a line after the reference's ``yield_time_ms`` one says so, so the model need not
    poll with ``wait``. ``image_detail``, ``code_mode_only`` and ``mcp``: see
    :func:`exec_sections`.
    """
    return "\n\n".join(
        exec_sections(
            tools,
            namespace_descriptions=namespace_descriptions,
            deferred=deferred,
            code_argument=code_argument,
            push=push,
            image_detail=image_detail,
            code_mode_only=code_mode_only,
            mcp=mcp,
        )
    )


def speaks_mcp(
    tools: Sequence[ToolDefinition],
    *,
    deferred: bool = False,
    code_mode_only: bool = False,
    mcp: bool | None = None,
) -> bool:
    """Whether the ``exec`` description speaks of MCP: the ``Shared MCP Types:`` block,
    and the MCP sentences of the ``image``, ``audio`` and ``forward_output`` lines.

    ``mcp`` decides when given. Otherwise: always with ``code_mode_only`` (the
    reference's code-mode-only mode shows the types whatever the tools); in deferred
    mode always too, since which tools a deferred catalog holds must not change the
    text and such a catalog may hold MCP tools at any time (pass ``mcp=False`` for one
    that never does); else when a tool returns an MCP ``CallToolResult``."""
    if mcp is not None:
        return mcp
    if code_mode_only or deferred:
        return True
    return any(is_mcp_call_tool_result(tool.output_schema) for tool in tools)


def exec_sections(
    tools: Sequence[ToolDefinition],
    *,
    namespace_descriptions: Mapping[str, NamespaceDescription] | None = None,
    deferred: bool = False,
    code_argument: str | None = None,
    push: bool = False,
    extra_helpers: Sequence[str] = (),
    image_detail: bool = True,
    code_mode_only: bool = False,
    mcp: bool | None = None,
) -> list[str]:
    """The parts of :func:`exec_description`, in order, for a host that inserts its
    own (join them with a blank line). ``extra_helpers`` are more helper lines
    (``- `name(...)`: ...``), put after this package's. ``image_detail=False`` is for
    APIs whose images have no detail level (MCP, Anthropic): the ``image`` line is the
    reference's one without it. ``code_mode_only=True`` emits ``Shared MCP Types:``
    whatever the tools return, as the reference does in its code-mode-only mode, so the
    text stays the same when a tool's output schema changes. ``mcp``: whether the text
    speaks of MCP at all (:func:`speaks_mcp`; ``None``: decided as it says)."""
    mcp = speaks_mcp(tools, deferred=deferred, code_mode_only=code_mode_only, mcp=mcp)
    guide = _guide(tools, code_argument, push, extra_helpers, image_detail, deferred, mcp)
    parts = [guide]
    guidance = "\n".join(guide_texts.DEFERRED_GUIDANCE)
    if deferred and any(_is_tool_search(tool) for tool in tools):
        guidance += "\n\n" + guide_texts.TOOL_SEARCH_GUIDANCE
    parts.append(guidance)
    if mcp:
        parts.append(f"Shared MCP Types:\n```ts\n{MCP_TYPES_PREAMBLE}\n```")
    if not deferred and tools:
        parts.append(tool_reference(tools, namespace_descriptions))
    return parts


def wait_description(*, push: bool = False, idle_floor_ms: int | None = None) -> str:
    """The description of the ``wait`` tool: when to use it and what its arguments and
    results mean. Without options it is the reference's text.

    ``push=True``: the host gives the model each program's result when it finishes,
    so the description says that ``wait`` is not needed for it. ``idle_floor_ms``: the
    host's idle floor (``CodeModeSession(wait_idle_floor_ms=...)``), which the
    description explains."""
    lines = list(guide_texts.WAIT)
    if idle_floor_ms is not None:
        at = next(i for i, line in enumerate(lines) if line.startswith("- `yield_time_ms`"))
        lines.insert(at + 1, guide_texts.IDLE_FLOOR.format(seconds=f"{idle_floor_ms / 1000:g}"))
    if push:
        lines.insert(1, guide_texts.WAIT_PUSH)
        lines = [
            line.replace(guide_texts.YIELD_AGAIN, guide_texts.YIELD_AGAIN_PUSH) for line in lines
        ]
    return _defaults("\n".join(lines))


def _defaults(text: str) -> str:
    return text.replace("{yield_time_ms}", str(DEFAULT_YIELD_TIME_MS)).replace(
        "{max_output_tokens}", str(DEFAULT_MAX_OUTPUT_TOKENS)
    )


def _is_tool_search(tool: ToolDefinition) -> bool:
    """Whether ``tool`` is the search tool (``tools.tool_search``), whose presence
    makes discovery ranked, as the reference's ``DeferredToolDiscovery::RankedSearch``."""
    return tool.name == "tool_search" and tool.description == guide_texts.TOOL_SEARCH_GUIDANCE


def _guide(
    tools: Sequence[ToolDefinition],
    code_argument: str | None,
    push: bool,
    extra_helpers: Sequence[str],
    image_detail: bool,
    deferred: bool,
    mcp: bool,
) -> str:
    """The guide. In deferred mode the tools' names and kinds stay out of it (the
    catalog may change: see the module documentation)."""
    shown = [] if deferred else [tool for tool in tools if not _is_tool_search(tool)]
    intro: list[str] = []
    for line in guide_texts.INTRO:
        if line == guide_texts.RAW_INPUT:
            line = guide_texts.input_line(code_argument)
        elif line == guide_texts.TOOLS_LINE:
            line = guide_texts.tools_line(
                [(normalize_identifier(tool.name), tool.name) for tool in shown]
            )
        elif line == guide_texts.INPUT_KIND_LINE:
            kinds = {ToolKind.FUNCTION, ToolKind.FREEFORM} if deferred else {t.kind for t in tools}
            line = guide_texts.input_kind_line(
                ToolKind.FUNCTION in kinds or not kinds, ToolKind.FREEFORM in kinds
            )
        intro.append(line)
        if push and line.startswith("- `yield_time_ms`"):
            intro.append(guide_texts.EXEC_PUSH)
    image = guide_texts.IMAGE_HELPER_DETAIL if image_detail else guide_texts.IMAGE_HELPER_PLAIN
    helpers = [
        image if line == guide_texts.IMAGE_HELPER else line
        for line in (*guide_texts.HELPERS, *guide_texts.EXTRA_HELPERS, *extra_helpers)
    ]
    if not mcp:
        helpers = [guide_texts.WITHOUT_MCP.get(line, line) for line in helpers]
    return _defaults("\n".join(intro)) + "\n\n" + "\n".join(helpers)
