"""`python -m core`: the same command line as `batchviz`."""

import sys

from .cli import main

sys.exit(main())
