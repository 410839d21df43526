"""``fastagent sessions list|show|export|import``, run as the real process: output, files, and one
clear line with the documented exit code for every bad input."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import AgentFactory, RunCli, find_record, record_file, record_files

FIXTURE = Path(__file__).parents[1] / "sessions" / "fixtures" / "original-0.18.jsonl"
PI_A = "0199a8f2-7c1e-7a55-9a41-3c2b1d0e9f10"
PI_B = "0199a8f3-1111-7000-8000-aaaaaaaaaaaa"


def jsonl(lines: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)


def pi_session(directory: Path, session: str, prompt: str, stamp: str) -> Path:
    """A session as pi's coding agent writes one (model and thinking first, then the messages)."""
    answer = {
        "role": "assistant",
        "content": [{"type": "text", "text": "done"}],
        "api": "x",
        "provider": "scripted",
        "model": "echo",
        "usage": {},
        "stopReason": "stop",
        "timestamp": 2,
    }
    base = {"timestamp": stamp}
    lines = [
        {"type": "session", "version": 3, "id": session, "timestamp": stamp, "cwd": "/home/u/proj"},
        {
            "type": "model_change",
            "id": "a1",
            "parentId": None,
            **base,
            "provider": "scripted",
            "modelId": "echo",
        },
        {"type": "thinking_level_change", "id": "a2", "parentId": "a1", **base, "thinkingLevel": "off"},
        {
            "type": "message",
            "id": "a3",
            "parentId": "a2",
            **base,
            "message": {"role": "user", "content": prompt},
        },
        {"type": "message", "id": "a4", "parentId": "a3", **base, "message": answer},
    ]
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{stamp.replace(':', '-').replace('.', '-')}_{session}.jsonl"
    path.write_text(jsonl(lines))
    return path


@pytest.fixture
def agent(make_agent: AgentFactory, run_cli: RunCli) -> Path:
    root = make_agent(model="scripted/echo")
    for session, prompt in [("telegram:-100", "first question"), ("slack:T1:C2:17.1", "second question")]:
        assert run_cli("invoke", prompt, str(root), "--session", session).returncode == 0
    return root


def sessions_dir(agent: Path) -> Path:
    return agent / ".fastagent" / "sessions"


# --- list ------------------------------------------------------------------------------------------------


def test_list_in_text_and_json(agent: Path, run_cli: RunCli) -> None:
    done = run_cli("sessions", "list", str(agent))
    assert done.returncode == 0, done.stderr
    header, newest, older = done.stdout.splitlines()
    assert header.split() == ["ID", "UPDATED", "MSGS", "TOKENS", "COST", "PREVIEW"]  # no session has a name
    assert newest.startswith("slack:T1:C2:17.1") and newest.endswith("  $0  second question")
    assert older.startswith("telegram:-100") and older.endswith("first question")

    doc = json.loads(run_cli("sessions", "list", str(agent), "--json").stdout)
    assert doc["total"] == 2 and [s["session"] for s in doc["sessions"]] == [
        "slack:T1:C2:17.1",
        "telegram:-100",
    ]
    first = doc["sessions"][0]
    assert set(first) == {
        "session",
        "name",
        "createdAt",
        "updatedAt",
        "messageCount",
        "preview",
        "path",
        "usage",
    }
    assert first["usage"]["requests"] == 1 and first["usage"]["cost"] == 0  # scripted: tokens, no prices
    assert first["messageCount"] == 2 and first["preview"] == "second question" and first["name"] is None
    assert first["path"] == str(record_file(sessions_dir(agent), "slack:T1:C2:17.1"))

    last = run_cli("sessions", "list", str(agent), "--limit", "1")
    assert len(last.stdout.splitlines()) == 2 and "slack:T1:C2:17.1" in last.stdout
    assert "(1 most recent of 2; --limit 0 lists them all)" in last.stderr


def test_list_with_a_name_and_nothing_stored(agent: Path, make_agent: AgentFactory, run_cli: RunCli) -> None:
    path = record_file(sessions_dir(agent), "telegram:-100")
    with path.open("a") as fh:
        fh.write('{"type":"session_info","id":"n1","parentId":null,"timestamp":"t","name":"Deploy plan"}\n')
    done = run_cli("sessions", "list", str(agent))
    assert done.stdout.splitlines()[0].split() == [
        "ID",
        "NAME",
        "UPDATED",
        "MSGS",
        "TOKENS",
        "COST",
        "PREVIEW",
    ]
    assert "Deploy plan" in done.stdout

    empty = make_agent(name="empty")
    nothing = run_cli("sessions", "list", str(empty))
    assert nothing.returncode == 0 and nothing.stdout == ""
    assert f"no sessions yet in {sessions_dir(empty.resolve())}" in nothing.stderr
    moved = sessions_dir(empty) / "--old-place--"
    moved.mkdir(parents=True)
    (moved / "2026-01-01T00-00-00-000Z_x.jsonl").write_text("{}\n")
    hint = run_cli("sessions", "list", str(empty)).stderr
    assert "--old-place-- (1)" in hint and f"fastagent sessions import {moved.resolve()}" in hint


def test_list_bad_input(agent: Path, run_cli: RunCli, tmp_path: Path) -> None:
    bad = run_cli("sessions", "list", str(agent), "--limit", "-1")
    assert bad.returncode == 2 and "Invalid value for '--limit'" in bad.stderr
    nowhere = run_cli("sessions", "list", str(tmp_path / "nowhere"))
    assert (
        nowhere.returncode == 1
        and nowhere.stderr.startswith("Error: ")
        and len(nowhere.stderr.splitlines()) == 1
    )
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for command in (["list"], ["show", "x"], ["export", "x"]):
        done = run_cli("sessions", *command, str(agent), "--sessions-dir", str(a_file))
        expected = f"Error: --sessions-dir {a_file}: {a_file} is not a directory\n"
        assert (done.returncode, done.stderr) == (1, expected), command


# --- show ------------------------------------------------------------------------------------------------


def test_show_by_id_or_prefix(agent: Path, run_cli: RunCli) -> None:
    done = run_cli("sessions", "show", "tele", str(agent))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["session", "telegram:-100"]
    assert "[assistant · scripted/echo]" in lines and "echo: first question" in lines
    assert any(line.startswith("[user · ") for line in lines)

    ambiguous = run_cli("sessions", "show", "", str(agent))
    assert ambiguous.returncode == 1
    assert "Error: '' is the start of 2 session ids (" in ambiguous.stderr
    unknown = run_cli("sessions", "show", "nope", str(agent))
    assert unknown.returncode == 1
    assert unknown.stderr.startswith("Error: no session 'nope' in ") and "sessions list" in unknown.stderr


def test_show_a_damaged_record(agent: Path, run_cli: RunCli) -> None:
    record_file(sessions_dir(agent), "telegram:-100").write_text("garbage\n")
    done = run_cli("sessions", "show", "telegram:-100", str(agent))
    warning, error = done.stderr.splitlines()  # the store's warning names the line, then the error
    assert (
        done.returncode == 1 and warning.startswith("WARN  [sessions] ") and "line 1 is not a JSON" in warning
    )
    assert error.startswith("Error: ") and error.endswith("is not a session record (no header line)")


# --- export ----------------------------------------------------------------------------------------------


def test_export_jsonl_and_markdown(agent: Path, run_cli: RunCli, tmp_path: Path) -> None:
    path = record_file(sessions_dir(agent), "telegram:-100")
    done = run_cli("sessions", "export", "telegram:-100", str(agent))
    assert done.returncode == 0 and done.stdout.encode() == path.read_bytes()

    out = tmp_path / "chat.md"
    written = run_cli("sessions", "export", "tele", str(agent), "-o", str(out))
    assert written.returncode == 0, written.stderr
    assert f"exported session telegram:-100 to {out} (md)" in written.stderr
    text = out.read_text()
    assert text.startswith("# Session telegram:-100\n") and "## User · " in text
    assert "## Assistant · scripted/echo\n\necho: first question" in text
    assert stat.S_IMODE(out.stat().st_mode) == 0o600

    as_jsonl = tmp_path / "copy.txt"
    assert (
        run_cli("sessions", "export", "tele", str(agent), "-o", str(as_jsonl), "--format", "jsonl").returncode
        == 0
    )
    assert as_jsonl.read_bytes() == path.read_bytes()


def test_export_bad_input(agent: Path, run_cli: RunCli, tmp_path: Path) -> None:
    fmt = run_cli("sessions", "export", "tele", str(agent), "--format", "xml")
    assert fmt.returncode == 2 and fmt.stderr == "Error: unknown format 'xml': use jsonl or md\n"
    missing = run_cli("sessions", "export", "nope", str(agent))
    assert missing.returncode == 1 and "no session 'nope'" in missing.stderr
    nowhere = run_cli("sessions", "export", "tele", str(agent), "-o", str(tmp_path / "no" / "dir.md"))
    assert nowhere.returncode == 1 and nowhere.stderr.startswith(
        f"Error: cannot write {tmp_path / 'no' / 'dir.md'}"
    )


# --- import ----------------------------------------------------------------------------------------------


def test_import_a_record_of_the_original(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent(model="scripted/echo")
    done = run_cli("sessions", "import", str(FIXTURE), str(agent))
    assert done.returncode == 0, done.stderr
    path = record_file(sessions_dir(agent), "telegram:-1001234567890")
    assert done.stdout == f"imported telegram:-1001234567890 ({path})\n"
    # stored in the spec's layout, named as the original after 0.18 names it
    assert path.parent.name == "agent-session"
    assert path.name == "2026-08-19T03-05-46-120Z_stelegram_3A-1001234567890.jsonl"
    original_header, _, original_body = FIXTURE.read_bytes().partition(b"\n")
    header, _, body = path.read_bytes().partition(b"\n")
    assert body == original_body  # every entry byte for byte
    assert json.loads(header) == {
        **json.loads(original_header),
        "id": "stelegram_3A-1001234567890",
        "cwd": str(agent.resolve()),
    }

    again = run_cli("sessions", "import", str(FIXTURE), str(agent))
    assert again.returncode == 1
    assert "exists here already" in again.stderr and "--as ID or --new-id" in again.stderr

    copied = run_cli("sessions", "import", str(FIXTURE), str(agent), "--as", "copy")
    assert copied.returncode == 0, copied.stderr
    copy = json.loads(record_file(sessions_dir(agent), "copy").read_text().splitlines()[0])
    assert copy["id"] == "scopy" and copy["parentSession"] == str(FIXTURE)
    fresh = run_cli("sessions", "import", str(FIXTURE), str(agent), "--new-id", "--json")
    (imported,) = json.loads(fresh.stdout)["imported"]
    assert len(imported["session"]) == 36 and imported["from"] == str(FIXTURE)

    shown = run_cli("sessions", "show", "copy", str(agent))
    assert shown.returncode == 0 and "Summarise the README" in shown.stdout


def test_import_from_pis_sessions_directory(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = make_agent(model="scripted/echo")
    pi_root = Path(os.environ["HOME"]) / ".pi" / "agent" / "sessions"
    pi_session(pi_root / "--home-u-proj--", PI_A, "from pi, older", "2026-03-15T10:00:00.000Z")
    newest = pi_session(pi_root / "--home-u-other--", PI_B, "from pi, newer", "2026-03-16T10:00:00.000Z")
    os.utime(newest, (newest.stat().st_mtime + 10, newest.stat().st_mtime + 10))

    many = run_cli("sessions", "import", str(pi_root), str(agent))
    assert many.returncode == 1
    assert many.stderr == (
        f"Error: {pi_root} holds 2 sessions: pick one with --session ID, or take them all with --all "
        f"(newest: {PI_B}, {PI_A})\n"
    )
    one = run_cli("sessions", "import", str(pi_root), str(agent), "--session", PI_A[:10])
    assert one.returncode == 0, one.stderr
    continued = run_cli("invoke", "hello again", str(agent), "--session", PI_A)
    assert continued.stdout == "echo: hello again\n"
    shown = run_cli("sessions", "show", PI_A, str(agent)).stdout
    assert "from pi, older" in shown and "hello again" in shown

    rest = run_cli("sessions", "import", str(pi_root), str(agent), "--all", "--json")
    assert rest.returncode == 1
    doc = json.loads(rest.stdout)
    assert [i["session"] for i in doc["imported"]] == [PI_B]
    assert len(doc["failed"]) == 1 and "exists here already" in doc["failed"][0]["error"]
    assert "Error: 1 of 2 sessions were not imported (see above)" in rest.stderr


def test_import_upgrades_a_version_1_pi_session(
    make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path
) -> None:
    agent = make_agent(model="scripted/echo")
    old = tmp_path / "v1.jsonl"
    old.write_text(
        jsonl(
            [
                {"type": "session", "id": "legacy-1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/p"},
                {
                    "type": "message",
                    "timestamp": "t",
                    "message": {"role": "user", "content": "early", "timestamp": 1},
                },
                {"type": "message", "timestamp": "t", "message": {"role": "hookMessage", "content": "hook"}},
                {
                    "type": "compaction",
                    "timestamp": "t",
                    "summary": "s",
                    "firstKeptEntryIndex": 2,
                    "tokensBefore": 9,
                },
            ]
        )
    )
    done = run_cli("sessions", "import", str(old), str(agent))
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in record_file(sessions_dir(agent), "legacy-1").read_text().splitlines()]
    assert lines[0]["version"] == 3
    ids = [e["id"] for e in lines[1:]]
    assert [e["parentId"] for e in lines[1:]] == [None, ids[0], ids[1]]
    assert lines[2]["message"]["role"] == "custom" and lines[3]["firstKeptEntryId"] == ids[1]


def test_import_from_another_agent_directory(make_agent: AgentFactory, run_cli: RunCli) -> None:
    other = make_agent(model="scripted/echo", name="other")
    assert run_cli("invoke", "in the other agent", str(other), "--session", "team:1").returncode == 0
    flat = sessions_dir(other) / "sold.jsonl"  # a record the other agent still keeps in the old layout
    flat.write_text(
        jsonl(
            [
                {
                    "type": "session",
                    "version": 3,
                    "id": "u",
                    "timestamp": "t",
                    "cwd": "/",
                    "fastagentSession": "old",
                }
            ]
        )
    )
    agent = make_agent(model="scripted/echo", name="mine")
    done = run_cli("sessions", "import", str(other), str(agent), "--all")
    assert done.returncode == 0, done.stderr
    assert find_record(sessions_dir(agent), "team:1") is not None and find_record(sessions_dir(agent), "old")
    assert flat.exists()  # a source is only read
    assert {p.parent.name for p in record_files(sessions_dir(agent))} == {"agent-session"}


def test_import_bad_input(agent: Path, run_cli: RunCli, tmp_path: Path) -> None:
    missing = run_cli("sessions", "import", str(tmp_path / "nope.jsonl"), str(agent))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    text = tmp_path / "notes.jsonl"
    text.write_text("hello\n")
    foreign = run_cli("sessions", "import", str(text), str(agent))
    assert foreign.returncode == 1
    assert foreign.stderr == f"Error: {text} is not a session file (its first line is no session header)\n"
    both = run_cli("sessions", "import", str(FIXTURE), str(agent), "--as", "x", "--new-id")
    assert both.returncode == 2 and both.stderr == "Error: --as and --new-id are mutually exclusive\n"
    every = run_cli("sessions", "import", str(FIXTURE), str(agent), "--all", "--as", "x")
    assert every.returncode == 2 and "--all takes every session under its own id" in every.stderr
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    nothing = run_cli("sessions", "import", str(empty_dir), str(agent))
    assert nothing.returncode == 1 and nothing.stderr == f"Error: no session files in {empty_dir}\n"
    unknown = run_cli("sessions", "import", str(FIXTURE.parent), str(agent), "--session", "zzz")
    assert unknown.returncode == 1 and "no session 'zzz' in" in unknown.stderr
    own = record_file(sessions_dir(agent), "telegram:-100")
    itself = run_cli("sessions", "import", str(own), str(agent))
    assert itself.returncode == 1 and "is this agent's session 'telegram:-100' already" in itself.stderr


def test_session_ids_complete_from_the_file_names(agent: Path) -> None:
    import click

    from fastagent_cli.cli.completers import session_ids

    ctx = click.Context(click.Command("show"))
    ctx.params["directory"] = str(agent)
    before = sorted(p.name for p in record_files(sessions_dir(agent)))
    items = session_ids(ctx, click.Argument(["x"]), "tele")
    assert [i.value for i in items] == ["telegram:-100"]
    assert len(session_ids(ctx, click.Argument(["x"]), "")) == 2
    assert sorted(p.name for p in record_files(sessions_dir(agent))) == before  # nothing written
    ctx.params["directory"] = str(agent / "nowhere")
    assert session_ids(ctx, click.Argument(["x"]), "") == []


def test_import_from_an_agent_directory_of_the_original(
    make_agent: AgentFactory, run_cli: RunCli, tmp_path: Path
) -> None:
    # The original 0.18 keeps <agent>/.state/sessions/--<workspace>--/<stamp>_<%-encoded id>.jsonl;
    # after 0.18 it writes new ones to <agent>/.state/sessions/agent-session/<stamp>_<s-id>.jsonl
    original = tmp_path / "orig" / "fastagent"
    records = original / ".state" / "sessions" / "--tmp-orig--"
    records.mkdir(parents=True)
    (original / "fastagent.config.mjs").write_text('export default { model: "fake/m1" };\n')
    (records / "2026-08-19T03-05-46-120Z_telegram%3A-1001234567890.jsonl").write_bytes(FIXTURE.read_bytes())
    newer = original / ".state" / "sessions" / "agent-session"
    newer.mkdir()
    header, _, body = FIXTURE.read_bytes().partition(b"\n")
    spec_header = {**json.loads(header), "id": "stelegram_3A-42_5Fa", "cwd": "/tmp/orig"}
    (newer / "2026-08-20T03-05-46-120Z_stelegram_3A-42_5Fa.jsonl").write_bytes(
        json.dumps(spec_header).encode() + b"\n" + body
    )
    agent = make_agent(model="scripted/echo")
    done = run_cli("sessions", "import", str(original), str(agent), "--all")
    assert done.returncode == 0, done.stderr
    assert sorted(line.split(" (")[0] for line in done.stdout.splitlines()) == [
        "imported telegram:-1001234567890",
        "imported telegram:-42_a",  # the s-id decoded as the directory it came from spells it
    ]
    for session in ("telegram:-1001234567890", "telegram:-42_a"):
        found = find_record(sessions_dir(agent), session)
        assert found is not None and found.parent.name == "agent-session"
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "fastagent.config.ts").write_text("export default {};\n")
    empty = run_cli("sessions", "import", str(bare), str(agent))
    assert empty.returncode == 1 and empty.stderr == f"Error: no session files in {bare}\n"
