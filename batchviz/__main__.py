"""`python -m batchviz`: the same command line as `batchviz`."""

import sys

from .cli import main

sys.exit(main())
