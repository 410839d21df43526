"""The agent directory: placement, ``fastagent.toml``, ``.env``, prompt assembly."""
