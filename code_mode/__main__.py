"""``python -m code_mode``: the ``code-mode`` command (see :mod:`code_mode.cli`)."""

import sys

from .cli import main

sys.exit(main())
