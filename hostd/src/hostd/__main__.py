"""``python -m hostd``: the same as the ``hostd`` command."""

import sys

from hostd.cli.main import main

sys.exit(main())
