"""Allow ``python -m mtcabench``."""

from mtcabench.cli import main

main()
