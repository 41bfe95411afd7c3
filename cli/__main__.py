"""``python -m cli``: how ``toolsel up`` starts each service process."""

from cli.main import main

main()
