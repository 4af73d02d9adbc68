"""``python -m benchy``: a shim for :func:`benchy.cli.main`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
