"""``exec`` and ``wait`` of a :class:`~code_mode.CodeModeSession` as the tools of agent
frameworks, in-process (no MCP hop): :mod:`.pydantic_ai` (``pip install
'code-mode[pydantic-ai]'``) and :mod:`.openai_agents` (``pip install
'code-mode[openai-agents]'``). Each module imports its framework; import the one you use.

The tools carry the session's own descriptions (with push and the idle floor as the
session was made), and each call goes to :meth:`~code_mode.CodeModeSession.handle_call`,
so a bad call from the model comes back as a ``Script failed`` result, never an
exception. Both frameworks run on asyncio: the session runs there as trio's guest
(see ``docs/agent.md``).
"""
