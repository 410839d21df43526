"""The one error hierarchy. Exit codes live on the types: 1 runtime, 2 usage.

::

    FastagentError (exit 1)                  anything fastagent reports as "Error: ..."
    ├── UsageError (exit 2)                  bad flags, arguments, malformed JSON args
    ├── ConfigError                          fastagent.toml, models.json, .env, catalog problems
    │   └── PlacementError                   no agent / several agents / not at the agent root
    ├── ModelError                           unknown or missing model spec
    ├── CredentialError                      missing or unreadable credentials
    ├── ProviderError                        a model API answered with an error (status, retryable)
    ├── SessionError                         a session record cannot be read or written
    │   └── SessionBusyError                 the session's lease is held (a run or a write; retryable)
    ├── DatabaseError                        the state database cannot be reached or refused (retryable)
    ├── ToolError                            a tool cannot be found or loaded
    ├── ScheduleError                        an unknown schedule or wake-up, unreadable schedule state
    ├── ServeError                           a host cannot bind or a channel cannot start
    ├── ChannelApiError                      a chat platform's API refused a call or did not answer
    ├── ControlRequestError                  a session control plane request failed (status, code)
    └── DeployError                          a deploy gate ("deploy stopped: ...") or a host CLI failure

Control-flow signals are not errors and do not live here.
"""

from __future__ import annotations

import sys
from typing import ClassVar, TextIO

__all__ = [
    "ChannelApiError",
    "ConfigError",
    "ControlRequestError",
    "CredentialError",
    "DatabaseError",
    "DeployError",
    "FastagentError",
    "ModelError",
    "PlacementError",
    "ProviderError",
    "ScheduleError",
    "ServeError",
    "SessionBusyError",
    "SessionError",
    "ToolError",
    "UsageError",
]


class FastagentError(Exception):
    """Base of every error fastagent reports to a user. Printed as one ``Error: ...`` line.

    ``public`` is the form a remote caller may see when the message holds what only the operator
    should (a command line, a file's contents); ``None`` when the message itself is fit to share.
    """

    exit_code: ClassVar[int] = 1

    def __init__(self, message: str, *, public: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.public = public

    def show(self, file: TextIO | None = None) -> None:
        stream = file if file is not None else sys.stderr
        stream.write(f"Error: {one_line(self.message)}\n")


class UsageError(FastagentError):
    exit_code: ClassVar[int] = 2


class ConfigError(FastagentError):
    pass


class PlacementError(ConfigError):
    pass


class ModelError(FastagentError):
    pass


class CredentialError(FastagentError):
    pass


class ProviderError(FastagentError):
    """A model API failure, classified.

    ``retryable`` is true for 429, 5xx, connection resets and timeouts; ``retry_after`` is the
    server's ``Retry-After`` in seconds when it sent one.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


class SessionError(FastagentError):
    """A session record cannot be read or written. ``retryable`` when the cause may pass (a full
    disk); ``path`` names the file for the server log (never for remote callers)."""

    def __init__(
        self, message: str, *, retryable: bool = False, path: str | None = None, public: str | None = None
    ) -> None:
        super().__init__(message, public=public)
        self.retryable = retryable
        self.path = path


class SessionBusyError(SessionError):
    """The session's write lease is held (a run, a compaction or a settings write, in this process
    or another): nothing was done; retryable once the session is idle."""

    def __init__(self, session: str) -> None:
        super().__init__(
            f"session {session} is busy (a turn is running elsewhere); try again", retryable=True
        )
        self.session = session


class DatabaseError(FastagentError):
    """The shared state database (``state_backend = "postgres"``) cannot be reached, or refused
    what was asked. ``retryable`` when the cause may pass (a lost connection, a restarting
    server); the message never holds the database password."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class ToolError(FastagentError):
    pass


class ScheduleError(FastagentError):
    pass


class ServeError(FastagentError):
    pass


class DeployError(FastagentError):
    pass


class ChannelApiError(FastagentError):
    """A chat platform's API (Telegram, Slack, Feishu/Lark) refused a call or gave no answer.

    ``platform`` names the API (``telegram``, ``slack``, ``feishu``, ``lark``); ``call`` the method;
    ``status`` is the HTTP status (0: no HTTP answer: refused, reset, timed out); ``code`` is the
    platform's own error code when the answer carried one (Slack ``"missing_scope"``, Feishu
    ``99991400``); ``description`` is the platform's words, scrubbed of credentials.
    """

    def __init__(
        self,
        platform: str,
        call: str,
        status: int,
        description: str,
        code: int | str | None = None,
    ) -> None:
        numbered = f" code {code}" if isinstance(code, int) and code else ""
        text = (
            f"{platform} {call}: {description}"
            if status == 0
            else f"{platform} {call} failed: {status}{numbered} {description}"
        )
        super().__init__(text.strip())
        self.platform = platform
        self.call = call
        self.method = call
        self.status = status
        self.code = code
        self.description = description


class ControlRequestError(FastagentError):
    """A request to a session control plane (``/control``) got no usable answer.

    ``status`` is the HTTP status (``None`` when none arrived: refused, reset, timed out); ``code``
    is the plane's own error code when its reply carried one (``sessions_unavailable``);
    ``retryable`` is what the reply declared, else true for no answer, 429 and 5xx.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        code: str | None = None,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        if retryable is None:
            retryable = status is None or status == 429 or status >= 500
        self.retryable = retryable


def one_line(text: str, limit: int = 2000) -> str:
    """Collapse whitespace runs (newlines included) so a message stays on one line."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
