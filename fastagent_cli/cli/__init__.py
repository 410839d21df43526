"""The ``fastagent`` command line: a click tree whose commands import their work lazily."""
