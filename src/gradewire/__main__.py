"""`python -m gradewire`: the same as the `gradewire` command."""

import sys

from gradewire._cli import main

sys.exit(main())
