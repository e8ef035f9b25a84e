"""`python -m ingest.cli ...`: the `balance` command."""

import sys

from . import main

sys.exit(main())
