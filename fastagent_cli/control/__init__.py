"""The session control vocabulary: the hub's interface, its values, events and error codes.

Engine-neutral and standard-library only, like the contract: the engine and assembly implement
:class:`SessionControl` in process, the HTTP plane publishes it under ``/control``, and a remote
client implements it again over HTTP, so callers hold the same interface either way. The wire
formats are documented in ``docs/control-plane.md``.
"""

from fastagent_cli.control.events import (
    EVENT_TYPES,
    SUBSCRIBER_BUFFER_CAP,
    SessionEvent,
    SessionEventsClosed,
)
from fastagent_cli.control.protocol import Session, SessionCollection, SessionControl, SessionEventStream
from fastagent_cli.control.results import (
    BOUNDARY_COMMAND_FAILED,
    INVALID_COMMAND,
    NO_ACTIVE_RUN,
    NO_SUCH_SESSION,
    NOTHING_TO_COMPACT,
    PARTIAL_UPDATE,
    RETRYABLE,
    RUN_COMMAND_FAILED,
    SESSION_BUSY,
    SESSIONS_UNAVAILABLE,
    UNSUPPORTED_CAPABILITY,
    ActionResult,
    ControlError,
    SessionsUnavailable,
    accepted,
    rejected,
)
from fastagent_cli.control.types import (
    UPDATE_FIELDS,
    AgentCommand,
    Capabilities,
    EntryView,
    PendingPrompts,
    SessionEntries,
    SessionListing,
    SessionState,
    SessionUpdate,
    SessionUsage,
)
from fastagent_cli.control.wire import (
    Action,
    dispatch,
    envelope,
    envelopes,
    parse_action,
    parse_update,
    prompt_from_json,
    prompt_to_json,
    run_action,
)

__all__ = [
    "BOUNDARY_COMMAND_FAILED",
    "EVENT_TYPES",
    "INVALID_COMMAND",
    "NOTHING_TO_COMPACT",
    "NO_ACTIVE_RUN",
    "NO_SUCH_SESSION",
    "PARTIAL_UPDATE",
    "RETRYABLE",
    "RUN_COMMAND_FAILED",
    "SESSIONS_UNAVAILABLE",
    "SESSION_BUSY",
    "SUBSCRIBER_BUFFER_CAP",
    "UNSUPPORTED_CAPABILITY",
    "UPDATE_FIELDS",
    "Action",
    "ActionResult",
    "AgentCommand",
    "Capabilities",
    "ControlError",
    "EntryView",
    "PendingPrompts",
    "Session",
    "SessionCollection",
    "SessionControl",
    "SessionEntries",
    "SessionEvent",
    "SessionEventStream",
    "SessionEventsClosed",
    "SessionListing",
    "SessionState",
    "SessionUpdate",
    "SessionUsage",
    "SessionsUnavailable",
    "accepted",
    "dispatch",
    "envelope",
    "envelopes",
    "parse_action",
    "parse_update",
    "prompt_from_json",
    "prompt_to_json",
    "rejected",
    "run_action",
]
