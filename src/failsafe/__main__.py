"""``python -m failsafe``: the same as the ``failsafe`` command (how scenarios start their child processes)."""

import sys

from failsafe.cli.main import main

sys.exit(main())
