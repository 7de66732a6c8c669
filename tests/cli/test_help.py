"""The help of ``code-mode run`` and ``code-mode mcp serve`` states each default as it
is typed back: an integer in full (``%g`` had printed byte limits as ``2.68435e+08``),
with its MiB beside a size in bytes of whole mebibytes."""

from __future__ import annotations

import re

import attrs
import pytest

from code_mode import RuntimeConfig
from code_mode.cli import build_parser


@pytest.mark.parametrize("command", [["run"], ["mcp", "serve"]])
def test_every_default_reads_as_it_is_typed(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args([*command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    defaults = re.findall(r"\(default:? ([^)]*)\)", text)
    assert defaults, text
    for shown in defaults:
        assert not re.search(r"\d[eE][+-]?\d", shown), shown  # no exponent form
    for field in attrs.fields(RuntimeConfig):
        option = "--" + field.name.replace("_", "-")
        found = re.search(rf"{option}\S* \S+ RuntimeConfig\.{field.name} \(default ([^)]*)\)", text)
        assert found is not None, option
        if isinstance(field.default, int) and not isinstance(field.default, bool):
            number, _, size = found.group(1).partition(", ")
            assert number == str(field.default), option
            if size:  # a size in bytes of whole mebibytes says so
                assert field.name.endswith("_bytes"), option
                assert size == f"{field.default >> 20} MiB", option
    assert "(default 268435456, 256 MiB)" in text  # --memory-limit-bytes
