"""``python -m sessionstore.cli``."""

from . import main

main()
