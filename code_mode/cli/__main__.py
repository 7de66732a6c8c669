"""``python -m code_mode.cli``: the ``code-mode`` command (as ``python -m code_mode``)."""

import sys

from . import main

sys.exit(main())
