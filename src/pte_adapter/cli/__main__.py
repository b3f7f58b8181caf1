"""`python -m pte_adapter.cli ...`: the `pte-adapter` command without its installed script
(scripts/make_readme_images.py falls back to it)."""

import sys

from pte_adapter.cli import main

sys.exit(main())
