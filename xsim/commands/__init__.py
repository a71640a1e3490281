"""One module per ``xsim`` command: ``add_parser(subparsers)`` and ``run(args) -> int``."""
