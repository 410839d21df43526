"""Session files move between this project and the TypeScript original (0.18) both ways, as they are.

* ``fixtures/original-0.18.jsonl`` is a record as the original writes it (pi's v3 lines: a header
  whose ``id`` is the encoded caller id; user, assistant and tool-result messages; a tool call with
  thinking; a compaction; a ``model_change`` and a ``thinking_level_change``). Dropped into the
  state directory under the name the original gives it, it continues here, with its history, in
  the real ``fastagent`` process.
* A record written here is checked the way the original after 0.18 finds and reads one: a
  transcription of its lookup (``piSessionRecordStore.openOrCreate``: ``SessionManager.list(cwd,
  <dir>/agent-session)``, i.e. read each first line, keep headers that pass pi's header check and
  name this workspace as ``cwd``, match ``id`` against ``piSessionId(caller id)``) and of pi's
  ``parseEntryLine`` for every other line.
* Records of the older layout (``--<workspace>--/``, ``%XX`` ids: the original 0.18's, and this
  package's before the spec's layout) continue where they are, so a 0.18 original (its lookup
  transcribed too) still reads them back, and ``sessions list|show|export`` see every layout.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from fastagent_cli.sessions.layout import encode_id, workspace_dirname
from tests.conftest import AgentFactory, RunCli, record_file, record_files

FIXTURE = Path(__file__).with_name("fixtures") / "original-0.18.jsonl"
ORIGINAL_NAME = "2026-08-19T03-05-46-120Z_telegram%3A-1001234567890.jsonl"
SESSION = "telegram:-1001234567890"

PROBE = """
import json

def respond(request):
    seen = []
    for m in request.messages:
        content = m["content"]
        if isinstance(content, str):
            text = content
        else:
            text = " | ".join(b.get("text") or "<" + b["type"] + ">" for b in content)
        seen.append([m["role"], text])
    return json.dumps(seen)
"""


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# --- the original's side, transcribed ---------------------------------------------------------------


def original_encode(session: str) -> str:
    """``encodeSessionId`` of the original (sessions.ts, 0.18): per UTF-16 code unit."""
    out = []
    for unit in [c for ch in session for c in _utf16(ch)]:
        if re.fullmatch(r"[A-Za-z0-9._-]", chr(unit)):
            out.append(chr(unit))
        else:
            out.append(f"%{unit:02X}" if unit < 0x100 else f"%u{unit:04X}")
    return "".join(out)


def _utf16(ch: str) -> list[int]:
    data = ch.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def pi_header_ok(header: Any) -> bool:
    """pi-agent-core's ``parseHeaderLine`` (jsonl-storage.ts): what a header must be."""
    return (
        isinstance(header, dict)
        and header.get("type") == "session"
        and header.get("version") == 3
        and isinstance(header.get("id"), str)
        and bool(header["id"])
        and isinstance(header.get("timestamp"), str)
        and isinstance(header.get("cwd"), str)
        and bool(header["cwd"])
        and isinstance(header.get("parentSession", ""), str)
    )


def pi_entry_ok(entry: Any) -> bool:
    """pi-agent-core's ``parseEntryLine``."""
    return (
        isinstance(entry, dict)
        and isinstance(entry.get("type"), str)
        and isinstance(entry.get("id"), str)
        and bool(entry["id"])
        and (entry.get("parentId") is None or isinstance(entry.get("parentId"), str))
        and "parentId" in entry
        and isinstance(entry.get("timestamp"), str)
    )


def original_018_finds(sessions_dir: Path, workspace: Path, session: str) -> Path | None:
    """The original 0.18's ``openOrCreate`` lookup: ``repo.list({cwd}).find(m => m.id ===
    encode(id))``."""
    directory = sessions_dir / ("--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", str(workspace))) + "--")
    return _matching(directory, original_encode(session))


def original_spec_id(session: str) -> str:
    """``piSessionId`` of the original after 0.18 (session-store.ts): per UTF-16 code unit."""
    out = ["s"]
    for unit in [c for ch in session for c in _utf16(ch)]:
        if re.fullmatch(r"[A-Za-z0-9.-]", chr(unit)):
            out.append(chr(unit))
        else:
            out.append(f"_{unit:02X}" if unit < 0x100 else f"_u{unit:04X}")
    body = "".join(out)
    return re.sub(r"[.-]$", lambda m: f"_{ord(m.group()):02X}", body)


def original_finds(sessions_dir: Path, workspace: Path, session: str) -> Path | None:
    """The lookup of the original after 0.18: ``SessionManager.list(cwd, <dir>/agent-session)``
    (headers naming this workspace) ``.find(r => r.id === piSessionId(id))``."""
    return _matching(sessions_dir / "agent-session", original_spec_id(session), workspace)


def _matching(directory: Path, ident: str, workspace: Path | None = None) -> Path | None:
    found = []
    for path in sorted(directory.iterdir()) if directory.is_dir() else []:
        if path.is_dir() or not path.name.endswith(".jsonl"):
            continue
        first = path.read_text(encoding="utf-8").split("\n", 1)[0]
        header = json.loads(first) if first else None
        if not pi_header_ok(header) or header["id"] != ident:
            continue
        if workspace is None or header["cwd"] == str(workspace):
            found.append(path)
    assert len(found) <= 1
    return found[0] if found else None


# --- the original -> here --------------------------------------------------------------------------------


def test_a_record_of_the_original_continues_here(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent({"probe.py": PROBE}, model="scripted/echo")
    records = agent / ".fastagent" / "sessions" / workspace_dirname(str(agent.resolve()))
    records.mkdir(parents=True)
    dropped = records / ORIGINAL_NAME
    shutil.copyfile(FIXTURE, dropped)
    original = FIXTURE.read_bytes()

    done = run_cli("invoke", "Which files again?", str(agent), "--session", SESSION)
    assert done.returncode == 0, done.stderr
    # the session's model_change (scripted/probe:respond) answers, not the agent's scripted/echo;
    # what it was sent: the compaction summary, the kept exchange, then the new prompt
    seen = json.loads(done.stdout)
    assert [role for role, _ in seen] == ["user", "user", "assistant", "user"]
    assert seen[0][1].startswith(
        "The conversation history before this point was compacted into the following summary:\n\n"
        "<summary>\nThe user asked which files the repo holds (README.md, src/).\n</summary>"
    )
    assert seen[1:] == [
        ["user", "Summarise the README"],
        ["assistant", "It says the bot answers in the team chat."],
        ["user", "Which files again?"],
    ]

    assert record_files(agent / ".fastagent" / "sessions") == [dropped]  # the same file, continued
    assert original_018_finds(agent / ".fastagent" / "sessions", agent.resolve(), SESSION) == dropped
    data = dropped.read_bytes()
    assert data.startswith(original)  # nothing the original wrote was rewritten
    added = [json.loads(line) for line in data[len(original) :].decode().splitlines()]
    assert [e["message"]["role"] for e in added] == ["user", "assistant"]
    assert added[0]["parentId"] == "a3c6b409"  # hung under the original's last entry
    assert added[1]["message"]["provider"] == "scripted" and added[1]["message"]["model"] == "probe:respond"
    assert all(pi_entry_ok(e) for e in added)

    listed = run_cli("sessions", "list", str(agent), "--json")
    assert listed.returncode == 0, listed.stderr
    (summary,) = json.loads(listed.stdout)["sessions"]
    assert summary["session"] == SESSION and summary["messageCount"] == 8
    assert (
        summary["preview"] == "What files are in the repo?"
        and summary["createdAt"] == "2026-08-19T03:05:46.120Z"
    )

    shown = run_cli("sessions", "show", SESSION, str(agent))
    assert shown.returncode == 0, shown.stderr
    for part in [
        "[user · ",
        "What files are in the repo?",
        "(thinking) I should list them.",
        '→ bash {"command": "ls"}',
        "[tool result · bash]\nREADME.md\nsrc",
        "── compaction (1890 tokens before) ──\nThe user asked which files",
        "── model: scripted/probe:respond ──",
        "── thinking: off ──",
        "Which files again?",
    ]:
        assert part in shown.stdout, part


# --- here -> the original --------------------------------------------------------------------------------

TOOL = '''
from fastagent_cli import tool

@tool
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: 21C"
'''

SCRIPT = {
    "rules": [
        {
            "match": "weather",
            "steps": [{"toolCalls": [{"name": "lookup", "args": {"city": "Paris"}}]}, "Sunny."],
        },
        {"steps": ["ok"]},
    ]
}


def test_a_record_written_here_is_where_and_what_the_original_looks_for(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = make_agent(
        {"tools/lookup.py": TOOL, "scripts/s.json": json.dumps(SCRIPT)},
        model="scripted/s",
        config="coding_tools = false\n",
    )
    session = "feishu:oc_ab/thread 7 ü😀"
    first = run_cli(
        "chat", str(agent), "--session", session, input="weather in Paris?\n/model scripted/echo\n"
    )
    assert first.returncode == 0, first.stderr
    sessions_dir = agent / ".fastagent" / "sessions"
    path = record_file(sessions_dir, session)

    assert original_finds(sessions_dir, agent.resolve(), session) == path
    assert path.parent == sessions_dir / "agent-session"
    lines = _lines(path)
    header = lines[0]
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    assert header["id"] == "sfeishu_3Aoc_5Fab_2Fthread_207_20_FC_uD83D_uDE00"
    assert header["cwd"] == str(agent.resolve())
    stamp = header["timestamp"].replace(":", "-").replace(".", "-")
    assert path.name == f"{stamp}_{header['id']}.jsonl"  # pi's <ISO timestamp>_<id>.jsonl
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", header["timestamp"])  # toISOString()
    assert all(pi_entry_ok(e) for e in lines[1:])
    kinds = [(e["type"], e.get("message", {}).get("role")) for e in lines[1:]]
    assert kinds == [
        ("message", "user"),
        ("message", "assistant"),
        ("message", "toolResult"),
        ("message", "assistant"),
        ("model_change", None),
    ]
    assert lines[2]["message"]["content"][0]["type"] == "toolCall"
    assert lines[-1]["provider"] == "scripted" and lines[-1]["modelId"] == "echo"
    parents = [e["parentId"] for e in lines[1:]]
    assert parents == [None, *[e["id"] for e in lines[1:-1]]]  # one chain, as pi appends

    # the exported JSONL is the record's bytes: a file the original (or pi) opens as it is
    exported = run_cli("sessions", "export", session, str(agent))
    assert exported.returncode == 0 and exported.stdout.encode() == path.read_bytes()

    # and the next turn here still finds it under the same file
    again = run_cli("invoke", "more", str(agent), "--session", session)
    assert again.returncode == 0 and again.stdout == "echo: more\n"
    assert record_files(sessions_dir) == [path]


# --- every layout at once ------------------------------------------------------------------------------


def _record(header: dict[str, Any], text: str) -> bytes:
    entry = {
        "type": "message",
        "id": "e1",
        "parentId": None,
        "timestamp": "2026-08-19T03:05:47.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1},
    }
    return (json.dumps(header) + "\n" + json.dumps(entry) + "\n").encode()


def test_new_018_and_earlier_records_are_all_listed_shown_exported_and_continued(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    agent = make_agent(model="scripted/echo")
    workspace = str(agent.resolve())
    sessions_dir = agent / ".fastagent" / "sessions"
    older = sessions_dir / workspace_dirname(workspace)
    older.mkdir(parents=True)
    # the original 0.18's record, in its exact on-disk shape
    shutil.copyfile(FIXTURE, older / ORIGINAL_NAME)
    # a record this package wrote before the spec's layout: the same directory and spelling
    today = "2026-09-01T08-00-00-000Z_feishu%3Aoc_1%2Ft.jsonl"
    header = {
        "type": "session",
        "version": 3,
        "id": encode_id("feishu:oc_1/t"),
        "timestamp": "2026-09-01T08:00:00.000Z",
        "cwd": workspace,
    }
    (older / today).write_bytes(_record(header, "written before the spec's layout"))
    # a record of the original after 0.18 (the spec's layout), and one of another workspace that
    # shares the directory under the same id
    own = sessions_dir / "agent-session"
    own.mkdir()
    spec = {**header, "id": "s-100777", "timestamp": "2026-09-02T08:00:00.000Z"}
    newer = own / "2026-09-02T08-00-00-000Z_s-100777.jsonl"
    newer.write_bytes(_record(spec, "written after 0.18"))
    elsewhere = own / "2026-09-03T08-00-00-000Z_s-100777.jsonl"
    elsewhere.write_bytes(_record({**spec, "cwd": "/somewhere/else"}, "another workspace's"))

    listed = run_cli("sessions", "list", str(agent), "--json")
    assert listed.returncode == 0, listed.stderr
    found = {s["session"]: s["preview"] for s in json.loads(listed.stdout)["sessions"]}
    assert found == {
        SESSION: "What files are in the repo?",
        "feishu:oc_1/t": "written before the spec's layout",
        "-100777": "written after 0.18",  # not the other workspace's record
    }
    shown = run_cli("sessions", "show", "--", "-100777", str(agent))
    assert shown.returncode == 0 and "written after 0.18" in shown.stdout, shown.stderr
    for session, path in (
        (SESSION, older / ORIGINAL_NAME),
        ("feishu:oc_1/t", older / today),
        ("-100777", newer),
    ):
        exported = run_cli("sessions", "export", "--", session, str(agent))
        assert exported.returncode == 0 and exported.stdout.encode() == path.read_bytes(), exported.stderr

    for session in ("feishu:oc_1/t", "-100777"):  # each continues in its own file
        again = run_cli("invoke", "more", str(agent), "--session", session)
        assert again.returncode == 0 and again.stdout == "echo: more\n", again.stderr
    assert "echo: more" in (older / today).read_text() and "echo: more" in newer.read_text()
    assert "echo: more" not in elsewhere.read_text()
    assert original_018_finds(sessions_dir, agent.resolve(), "feishu:oc_1/t") == older / today
    assert original_finds(sessions_dir, agent.resolve(), "-100777") == newer
    # a new session goes to the spec's layout, beside them
    fresh = run_cli("invoke", "hi", str(agent), "--session", "-100888")
    assert fresh.returncode == 0, fresh.stderr
    assert original_finds(sessions_dir, agent.resolve(), "-100888") == record_file(sessions_dir, "-100888")
    assert sorted(p.name for p in older.iterdir() if p.suffix == ".jsonl") == sorted([ORIGINAL_NAME, today])
