"""`python -m dpsql` runs the CLI."""

import sys

from dpsql.cli import main

sys.exit(main())
