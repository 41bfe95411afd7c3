"""``python -m toolsel.cli``: how ``toolsel up`` starts each service process."""

from toolsel.cli.main import main

main()
