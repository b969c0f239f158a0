"""``python -m pytest_bpsperf.cli``: the ``bpsperf`` command."""

import sys

from . import main

sys.exit(main())
