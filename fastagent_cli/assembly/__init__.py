"""Assembly: the one place agents are built, and the only reader of an agent directory.

* :func:`create_agent` (L1) assembles from typed parts; ``instructions`` is the system prompt,
  verbatim, and ``tools`` are mounted as given.
* :func:`inspect_agent_dir` reads a directory once into an :class:`AgentSurface` that keeps its
  problems as data (``info``, ``tool``, the model picker and the ``dev`` supervisor stop here); it
  creates nothing on disk. :func:`locate_agent` / :func:`login_target` are the lighter read of
  ``login`` and ``logout``.
* :func:`open_session_archive` opens only an agent's stored sessions (``fastagent sessions``:
  list, show, export, import), with no model.
* :func:`open_agent` opens a surface (``invoke``, ``chat``, ``dev``, ``start``): it raises what is
  fatal and hands hosts an :class:`OpenedAgent`, the contract's ``Agent`` plus its session hub (``control``)
  and the owner's face on it (``sessions``, a :class:`SessionOwner`). :func:`open_agent_dir` is
  both steps at once.

The agent's ``channels/*.py`` files (which are enabled, what each one's ``channel`` is) are handed
to hosts from here too (:mod:`fastagent_cli.definition.channel_files`). Hosts import from here,
the contract and the errors only; the engine, the stores and the model registry stay behind these
ports.
"""

from fastagent_cli.assembly.archive import (
    ForeignRecord,
    SessionArchive,
    StoredSession,
    open_session_archive,
    stored_session_ids,
)
from fastagent_cli.assembly.control.owner import SessionOwner, SessionSettings, SessionSummary, SessionView
from fastagent_cli.assembly.library import create_agent
from fastagent_cli.assembly.opened import OpenedAgent, open_agent, open_agent_dir
from fastagent_cli.assembly.reading import (
    MISSING_MODEL,
    AgentLocation,
    AgentSurface,
    ScheduleDir,
    describe_credential,
    inspect_agent_dir,
    locate_agent,
    locate_state,
    login_target,
    read_schedules,
    resolve_model_spec,
)
from fastagent_cli.definition.channel_files import (
    CHANNELS_DIR,
    ChannelFiles,
    InspectedChannel,
    channel_files,
    connection_name,
    describe_exception,
    import_channel,
    inspect_channels,
    is_long_connection,
    module_name,
)
from fastagent_cli.definition.report import Finding, SummaryRow, format_row

__all__ = [
    "CHANNELS_DIR",
    "MISSING_MODEL",
    "AgentLocation",
    "AgentSurface",
    "ChannelFiles",
    "Finding",
    "ForeignRecord",
    "InspectedChannel",
    "OpenedAgent",
    "ScheduleDir",
    "SessionArchive",
    "SessionOwner",
    "SessionSettings",
    "SessionSummary",
    "SessionView",
    "StoredSession",
    "SummaryRow",
    "channel_files",
    "connection_name",
    "create_agent",
    "describe_credential",
    "describe_exception",
    "format_row",
    "import_channel",
    "inspect_agent_dir",
    "inspect_channels",
    "is_long_connection",
    "locate_agent",
    "locate_state",
    "login_target",
    "module_name",
    "open_agent",
    "open_agent_dir",
    "open_session_archive",
    "read_schedules",
    "stored_session_ids",
    "resolve_model_spec",
]
