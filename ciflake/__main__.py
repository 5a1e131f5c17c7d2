"""``python -m ciflake``: the same as the ``ciflake`` command."""

from ciflake.cli import main

main()
