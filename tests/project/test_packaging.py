"""What an installed copy says about itself: version, licence, changelog."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path

import code_mode

ROOT = Path(__file__).resolve().parents[2]


def test_the_version_is_the_metadatas() -> None:
    assert code_mode.__version__ == importlib.metadata.version("code-mode")


def test_the_license_file_matches_the_declared_licence() -> None:
    metadata = importlib.metadata.metadata("code-mode")
    assert metadata["License-Expression"] == "MIT"
    assert "LICENSE" in (metadata.get_all("License-File") or [])
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")


def test_the_changelog_has_the_current_version() -> None:
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"\n## {code_mode.__version__}\n" in changelog


def test_python_dash_m_runs_the_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "code_mode", "--version"], capture_output=True, text=True, timeout=30
    )
    assert (result.returncode, result.stdout) == (0, f"code-mode {code_mode.__version__}\n")
