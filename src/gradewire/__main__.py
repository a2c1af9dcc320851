"""`python -m gradewire`: the same as the `gradewire` command."""

import sys

from gradewire.cli import main

sys.exit(main())
