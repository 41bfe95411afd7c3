"""The ``toolsel`` command: the composition root that runs the services and talks to a running stack.

Only this package imports the services; one module per command group, assembled in ``toolsel.cli.main``."""
