"""``fastagent tool``: one tool, no model, no session; exit codes as a user sees them."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import RunCli

TOOLS = {
    "order.py": (
        "from fastagent_cli import tool\n\n@tool\ndef order(order_id: str) -> dict:\n"
        "    'Look up an order.'\n    print('NOISE from the tool')\n"
        "    return {'id': order_id, 'status': 'shipped'}\n"
    ),
    "boom.py": (
        "from fastagent_cli import tool\n\n@tool\ndef boom() -> str:\n"
        "    'Fails.'\n    raise RuntimeError('kaput')\n"
    ),
    "where.py": (
        "from fastagent_cli import tool, ToolContext\n\n@tool\ndef where(ctx: ToolContext) -> str:\n"
        "    'Where am I.'\n    return f'cwd={ctx.cwd} session={ctx.session}'\n"
    ),
    "broken.py": "import not_a_real_module_abc\n",
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    agent = tmp_path / "ws" / "fastagent"
    (agent / "tools").mkdir(parents=True)
    (agent / "fastagent.toml").write_text('coding_tools = ["read"]\n')
    for name, text in TOOLS.items():
        (agent / "tools" / name).write_text(text)
    (tmp_path / "ws" / "notes.txt").write_text("hello from the workspace\n")
    return tmp_path / "ws"


def test_text_result_of_a_coding_tool_runs_in_the_workspace(workspace: Path, run_cli: RunCli) -> None:
    done = run_cli("tool", "read", '{"path": "notes.txt"}', str(workspace))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello from the workspace\n\n"
    assert "[fastagent] result: " in done.stderr and "tokens to the model" in done.stderr


def test_stdout_is_exactly_what_the_model_receives(workspace: Path, run_cli: RunCli) -> None:
    done = run_cli("tool", "order", '{"order_id": "A-1"}', str(workspace))
    assert done.returncode == 0
    assert done.stdout == '{"id": "A-1", "status": "shipped"}\n'  # the compact JSON text sent, no re-format
    assert "NOISE" not in done.stdout and "NOISE from the tool" in done.stderr  # its prints go to stderr
    raw = run_cli("tool", "order", '{"order_id": "A-1"}', str(workspace), "--json")
    assert json.loads(raw.stdout) == {
        "content": [{"type": "text", "text": '{"id": "A-1", "status": "shipped"}'}],
        "isError": False,
        "details": {"id": "A-1", "status": "shipped"},
    }


def test_context_has_the_workspace_and_no_session(workspace: Path, run_cli: RunCli) -> None:
    done = run_cli("tool", "where", cwd=workspace)  # args default to {}, dir to .
    assert done.stdout.strip() == f"cwd={workspace.resolve()} session=None"


def test_malformed_json_is_a_usage_error_before_placement(tmp_path: Path, run_cli: RunCli) -> None:
    done = run_cli("tool", "read", "{nope", str(tmp_path / "not-an-agent"))
    assert done.returncode == 2
    assert done.stderr.startswith("Error: invalid JSON args: '{nope'")
    listed = run_cli("tool", "read", "[1, 2]", str(tmp_path))
    assert listed.returncode == 2 and "is not a JSON object" in listed.stderr


def test_unknown_tool_lists_the_available_ones(workspace: Path, run_cli: RunCli) -> None:
    done = run_cli("tool", "nope", "{}", str(workspace))
    assert done.returncode == 1
    assert "[fastagent] warn: tools/broken.py: ModuleNotFoundError" in done.stderr  # said before the error
    assert (
        done.stderr.strip().splitlines()[-1]
        == 'Error: unknown tool "nope". available: read, boom, order, where'
    )


def test_tool_error_exits_one_with_its_text(workspace: Path, run_cli: RunCli) -> None:
    done = run_cli("tool", "boom", "{}", str(workspace))
    assert done.returncode == 1
    assert done.stdout == "kaput\n"
    invalid = run_cli("tool", "order", '{"order_id": 5}', str(workspace))
    assert invalid.returncode == 1 and invalid.stdout.startswith("Invalid arguments: order_id:")


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html>fetched page</html>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def page_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/page"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_the_scaffolded_fetch_url_tool_works(tmp_path: Path, run_cli: RunCli, page_url: str) -> None:
    assert run_cli("init", "demo", cwd=tmp_path).returncode == 0
    done = run_cli("tool", "fetch_url", json.dumps({"url": page_url}), "demo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "HTTP 200 OK (text/html)\n\n<html>fetched page</html>\n"
    bad = run_cli("tool", "fetch_url", '{"url": "ftp://x"}', "demo", cwd=tmp_path)
    assert bad.returncode == 1 and "only http:// and https:// URLs" in bad.stdout
