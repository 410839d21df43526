"""The resource functions in the sandbox: ``list_resources`` and ``read_resource``.

They read the agent's MCP servers' resources through a :class:`ResourceReader` (the MCP tool
source gives one; this module imports no MCP code). Like tool functions they are host calls: each
counts toward a snippet's call budget and is logged in the result's details. A failure raises
``RuntimeError`` at the call site with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from fastagent_cli.tools.code_mode.driver import Call

__all__ = ["RESOURCE_FUNCTIONS", "RESOURCES_DOC", "ResourceReader", "resource_calls"]

RESOURCE_FUNCTIONS = ("list_resources", "read_resource")

RESOURCES_DOC = """\
MCP resources (each call counts toward the call budget):
- `list_resources(server=None) -> list[dict]`: `{"server", "uri", "name", "mimeType", ...}` for \
each resource of the MCP servers (or of one).
- `read_resource(uri, server=None)`: the resource's text (a one-text resource), else its \
contents as `[{"uri", "mimeType", "text"}]` (binary parts give their `size`); `server` is needed \
only when several servers list the URI."""


class ResourceReader(Protocol):
    async def listing(self, server: str | None = None) -> list[dict[str, Any]]: ...

    async def read(self, uri: str, server: str | None = None) -> Any: ...


def _bind(
    name: str, params: tuple[str, ...], required: int
) -> Callable[[tuple[Any, ...], dict[str, Any]], list[Any]]:
    """Python's argument binding for ``name(params...)``: the values in order, or a TypeError."""

    def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        if len(args) > len(params):
            raise TypeError(f"{name}() takes at most {len(params)} arguments ({len(args)} given)")
        values: list[Any] = list(args) + [None] * (len(params) - len(args))
        for key, value in kwargs.items():
            if key not in params:
                raise TypeError(f"{name}() got an unexpected keyword argument '{key}'")
            index = params.index(key)
            if index < len(args):
                raise TypeError(f"{name}() got multiple values for argument '{key}'")
            values[index] = value
        for index, value in enumerate(values):
            if index < required and value is None:
                raise TypeError(f"{name}() missing required argument '{params[index]}'")
            if value is not None and not isinstance(value, str):
                raise TypeError(
                    f"{name}() argument '{params[index]}' must be a string, not {type(value).__name__}"
                )
        return values

    return bind


def resource_calls(reader: ResourceReader) -> dict[str, Call]:
    """The sandbox functions over ``reader``."""
    bind_list = _bind("list_resources", ("server",), 0)
    bind_read = _bind("read_resource", ("uri", "server"), 1)

    async def list_resources(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        (server,) = bind_list(args, kwargs)
        try:
            return await reader.listing(server)
        except (RuntimeError, TypeError):
            raise
        except Exception as exc:
            raise RuntimeError(f"list_resources failed: {exc}") from None

    async def read_resource(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        uri, server = bind_read(args, kwargs)
        try:
            return await reader.read(uri, server)
        except (RuntimeError, TypeError):
            raise
        except Exception as exc:
            raise RuntimeError(f"read_resource({uri!r}) failed: {exc}") from None

    return {"list_resources": list_resources, "read_resource": read_resource}
