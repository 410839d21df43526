"""Smoke-test a built fastagent binary the way a user meets it (run by scripts/build-binary.sh).

    python scripts/smoke_binary.py build/dist/onedir/fastagent/fastagent

Everything runs from the binary, offline: ``--version``; ``init`` (full and ``--minimal``);
``invoke`` on the scripted demo, whose script makes a real ``bash`` tool call; ``info --json``;
``tool`` on a user tool that imports standard-library and bundled third-party modules; a tool of
an MCP stdio server; ``start`` answering ``GET /health`` and one ``POST /invoke``; ``add github`` and
``add telegram`` with ``start`` answering both webhook routes; ``add slack`` and ``add feishu`` with
``start`` answering Slack's signed and Feishu's encrypted ``url_verification``; ``dev --no-watch``
serving the web chat's files and its control plane; and ``chat``
in a pseudo-terminal. Prints one line per check; exits 1 naming the first failure.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import queue
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MCP_SERVER = ROOT / "tests" / "tools" / "mcp" / "mcp_test_server.py"

# A user tool that imports what a normal Python can: the binary must carry the standard library
# and the third-party packages it lists in the README.
PROBE_TOOL = '''
from fastagent_cli import tool


@tool
def stdlib_probe() -> dict:
    """Import standard-library and bundled modules and use a few of them."""
    import csv, ctypes, decimal, email.mime.text, io, sqlite3, statistics, xml.etree.ElementTree as ET
    import zoneinfo, ssl, hashlib, tarfile, zipfile, uuid, wave, curses, readline, dbm, lzma, bz2
    import aiohttp, httpx, pydantic, rich, croniter, click, prompt_toolkit

    db = sqlite3.connect(":memory:")
    db.execute("create table t (x)")
    db.execute("insert into t values (42)")
    rows = io.StringIO()
    csv.writer(rows).writerow(["a", "b"])
    return {
        "sqlite": db.execute("select x from t").fetchone()[0],
        "xml": ET.fromstring("<a><b>hi</b></a>").find("b").text,
        "mime": email.mime.text.MIMEText("x")["Content-Type"],
        "csv": rows.getvalue().strip(),
        "decimal": str(decimal.Decimal("0.1") + decimal.Decimal("0.2")),
        "mean": statistics.mean([1, 2, 3]),
        "libc": bool(ctypes.CDLL(None)),
    }
'''

PROBE_EXPECTED = {
    "sqlite": 42,
    "xml": "hi",
    "mime": 'text/plain; charset="us-ascii"',
    "csv": "a,b",
    "decimal": "0.3",
    "mean": 2,
    "libc": True,
}


class SmokeFailure(Exception):
    pass


CODER = """
def reply(request):
    if request.round == 0:
        code = "import asyncio\\nrs = await asyncio.gather(calc__add(a=1, b=2), calc__add(a=3, b=4))\\n"
        code += "sum(r['result'] for r in rs)"
        return {"toolCalls": [{"name": "run_code", "args": {"code": code}}]}
    return "sum is " + request.messages[-1]["content"][0]["text"]
"""


def check(condition: bool, what: str, detail: str = "") -> None:
    if not condition:
        raise SmokeFailure(f"{what}{': ' + detail if detail else ''}")


def run(binary: str, *args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FASTAGENT_")}
    return subprocess.run(
        [binary, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def ok(binary: str, *args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    done = run(binary, *args, cwd=cwd, timeout=timeout)
    check(done.returncode == 0, f"`fastagent {' '.join(args)}` exited {done.returncode}", done.stderr.strip())
    return done


def version_of_source() -> str:
    text = (ROOT / "fastagent_cli" / "_version.py").read_text(encoding="utf-8")
    found = re.search(r'__version__\s*=\s*"([^"]+)"', text)
    check(found is not None, "fastagent_cli/_version.py has no __version__")
    assert found is not None
    return found.group(1)


def smoke_cli(binary: str, tmp: Path) -> None:
    done = ok(binary, "--version", cwd=tmp)
    check(done.stdout == f"fastagent {version_of_source()}\n", "--version", repr(done.stdout))
    print("ok  --version")

    ok(binary, "init", "demo", cwd=tmp)
    agent = tmp / "demo" / "fastagent"
    for rel in ("fastagent.toml", "persona.md", "tools/fetch_url.py", "scripts/demo.json", ".env.example"):
        check((agent / rel).is_file(), f"init did not write {rel}")
    ok(binary, "init", "mini", "--minimal", cwd=tmp)
    check(not (tmp / "mini" / "fastagent" / "tools" / "fetch_url.py").exists(), "init --minimal wrote a tool")
    print("ok  init (full and --minimal)")

    done = ok(binary, "invoke", "hello", "demo", "--model", "scripted/demo", cwd=tmp)
    check(done.stdout.startswith("Hello! I am **scripted/demo**"), "invoke scripted/demo answer", done.stdout)
    check("[tool] bash" in done.stderr, "invoke scripted/demo made no bash tool call", done.stderr)
    done = ok(binary, "invoke", "hi", "mini", "--model", "scripted/echo", cwd=tmp)
    check(done.stdout == "echo: hi\n", "invoke on the minimal agent", done.stdout)
    print("ok  invoke (scripted demo with its tool call; minimal agent)")

    info = json.loads(ok(binary, "info", "demo", "--json", cwd=tmp).stdout)
    names = [t["name"] for t in info["tools"]]
    check(names == ["read", "bash", "edit", "write", "fetch_url"], "info --json tools", str(names))
    check(info["diagnostics"] == [] and info["toolFailures"] == [], "info --json findings", str(info))
    print("ok  info --json")

    (agent / "tools" / "stdlib_probe.py").write_text(PROBE_TOOL, encoding="utf-8")
    done = ok(binary, "tool", "stdlib_probe", "{}", "demo", cwd=tmp)
    check(json.loads(done.stdout) == PROBE_EXPECTED, "tool stdlib_probe", done.stdout + done.stderr)
    done = ok(binary, "tool", "read", '{"path": "fastagent/persona.md"}', "demo", cwd=tmp)
    check(len(done.stdout) > 20, "tool read", done.stdout)
    print("ok  tool (a user tool importing the standard library and bundled packages; read)")

    config = tmp / "mini" / "fastagent" / "fastagent.toml"
    server = f"command = {json.dumps(sys.executable)}\nargs = [{json.dumps(str(MCP_SERVER))}]\n"
    config.write_text(
        config.read_text(encoding="utf-8") + f"\n[mcp_servers.calc]\n{server}", encoding="utf-8"
    )
    done = ok(binary, "tool", "calc__add", '{"a": 2, "b": 3}', "mini", "--json", cwd=tmp)
    details = json.loads(done.stdout)[
        "details"
    ]  # --json: the raw result; stdout alone is what the model reads
    check(details.get("structuredContent") == {"result": 5}, "MCP tool calc__add", done.stdout + done.stderr)
    print("ok  MCP stdio server tool")

    (tmp / "mini" / "fastagent" / "coder.py").write_text(CODER, encoding="utf-8")
    config.write_text(
        config.read_text(encoding="utf-8").replace(
            "[mcp_servers.calc]", "code_mode = true\n\n[mcp_servers.calc]"
        )
    )
    done = ok(binary, "invoke", "sum", "mini", "--model", "scripted/coder:reply", cwd=tmp)
    check(
        done.stdout == "sum is 10\n",
        "code mode: run_code over calc__add in the sandbox",
        done.stdout + done.stderr,
    )
    print("ok  code mode (run_code in the bundled sandbox calling the MCP tool)")


def smoke_start(binary: str, tmp: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FASTAGENT_")}
    proc = subprocess.Popen(
        [binary, "start", "demo", "--port", "0", "--bind", "127.0.0.1", "--model", "scripted/echo"],
        cwd=tmp,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        port = _listen_port(proc)
        base = f"http://127.0.0.1:{port}"
        with urllib.request.urlopen(f"{base}/health", timeout=10) as response:
            check(response.status == 200 and response.read().strip() == b"ok", "GET /health")
        request = urllib.request.Request(
            f"{base}/invoke",
            data=json.dumps({"session": "smoke", "text": "hello"}).encode(),
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=20) as response:
            body = response.read().decode()
        events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]
        text = "".join(e.get("delta", "") for e in events if e["type"] == "text")
        check(text == "echo: hello" and events[-1]["type"] == "completed", "POST /invoke", body)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
        check(proc.returncode in (0, -signal.SIGTERM), f"start exited {proc.returncode} on SIGTERM")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    print("ok  start (GET /health, POST /invoke, SIGTERM)")


def smoke_channels(binary: str, tmp: Path) -> None:
    """``add github`` and ``add telegram`` into a fresh agent, then ``start`` answers both routes."""
    ok(binary, "init", "chan", "--minimal", cwd=tmp)
    ok(binary, "add", "github", "chan", cwd=tmp)
    ok(binary, "add", "telegram", "chan", cwd=tmp)
    agent = tmp / "chan" / "fastagent"
    for rel in ("channels/github.py", "channels/telegram.py", "tools/telegram_send.py"):
        check((agent / rel).is_file(), f"add did not write {rel}")
    secrets = dict(
        line.split("=", 1)
        for line in (agent / ".env").read_text().splitlines()
        if "=" in line and line[0] != "#"
    )
    with open(agent / ".env", "a", encoding="utf-8") as fh:
        fh.write("TELEGRAM_BOT_TOKEN=1:smoke\nTELEGRAM_API_BASE_URL=http://127.0.0.1:9\n")
    with _serving(binary, "chan", tmp) as base:
        ping = b'{"zen": "smoke"}'
        signature = (
            "sha256=" + hmac.new(secrets["GITHUB_WEBHOOK_SECRET"].encode(), ping, hashlib.sha256).hexdigest()
        )
        headers = {
            "content-type": "application/json",
            "x-github-event": "ping",
            "x-hub-signature-256": signature,
        }
        check(_status(f"{base}/webhook", ping, headers) == 204, "github ping with a good signature")
        check(
            _status(f"{base}/webhook", ping, {**headers, "x-hub-signature-256": "sha256=0"}) == 401,
            "bad signature",
        )
        edit = b'{"update_id": 1, "edited_message": {"message_id": 1, "chat": {"id": 1, "type": "private"}}}'
        token = {"x-telegram-bot-api-secret-token": secrets["TELEGRAM_SECRET_TOKEN"]}
        check(_status(f"{base}/telegram", edit, token) == 200, "telegram update with the secret token")
        check(_status(f"{base}/telegram", edit, {}) == 401, "telegram update without the secret token")
    print("ok  add github|telegram, start (POST /webhook, POST /telegram)")


# {"challenge": "smoke-challenge", "token": "smoke-token", "type": "url_verification"} encrypted the
# way Feishu does (AES-256-CBC, key SHA-256("smoke key"), IV first): decrypting it needs the
# `cryptography` package inside the binary.
_FEISHU_KEY = "smoke key"
_FEISHU_CHALLENGE = (
    "ZmFzdGFnZW50LXNtb2tlIW9OBdiMSTrmnhrMReiMmXJIGChusH4VhJY/3DhIcyvlszDK9rWJfNXM9nRdkiemON+Hge3XVzfi8sty"
    "jeMVElXICLQ5AGuRowBkvvexV6hAfXlxoEQrXaDMERzSroEx8w=="
)


def smoke_slack_feishu(binary: str, tmp: Path) -> None:
    """``add slack`` and ``add feishu --ingress webhook`` (no onboarding), then ``start`` answers
    Slack's signed and Feishu's encrypted ``url_verification``."""
    ok(binary, "init", "chat2", "--minimal", cwd=tmp)
    ok(binary, "add", "slack", "chat2", "--no-onboard", cwd=tmp)
    ok(binary, "add", "feishu", "chat2", "--ingress", "webhook", "--no-onboard", cwd=tmp)
    agent = tmp / "chat2" / "fastagent"
    for rel in ("channels/slack.py", "tools/slack_send.py", "channels/feishu.py", "tools/feishu_send.py"):
        check((agent / rel).is_file(), f"add did not write {rel}")
    with open(agent / ".env", "a", encoding="utf-8") as fh:
        fh.write(
            "SLACK_BOT_TOKEN=xoxb-smoke\nSLACK_SIGNING_SECRET=smoke-signing\nSLACK_API_BASE_URL=http://127.0.0.1:9\n"
            "FEISHU_APP_ID=cli_smoke\nFEISHU_APP_SECRET=smoke\nFEISHU_VERIFICATION_TOKEN=smoke-token\n"
            f"FEISHU_ENCRYPT_KEY={_FEISHU_KEY}\nFEISHU_API_BASE_URL=http://127.0.0.1:9\n"
        )
    with _serving(binary, "chat2", tmp) as base:
        challenge = b'{"type": "url_verification", "challenge": "slack-smoke", "token": "t"}'
        stamp = str(int(time.time()))
        signed = hmac.new(b"smoke-signing", b"v0:" + stamp.encode() + b":" + challenge, hashlib.sha256)
        headers = {
            "content-type": "application/json",
            "x-slack-request-timestamp": stamp,
            "x-slack-signature": "v0=" + signed.hexdigest(),
        }
        check(_answer(f"{base}/slack", challenge, headers) == (200, '{"challenge": "slack-smoke"}'), "slack")
        check(_status(f"{base}/slack", challenge, {**headers, "x-slack-signature": "v0=0"}) == 401, "slack")
        body = json.dumps({"encrypt": _FEISHU_CHALLENGE}).encode()
        answer = _answer(f"{base}/feishu", body, {"content-type": "application/json"})
        check(
            answer == (200, '{"challenge": "smoke-challenge"}'),
            "feishu encrypted url_verification",
            str(answer),
        )
    print("ok  add slack|feishu, start (POST /slack signed, POST /feishu encrypted)")


@contextlib.contextmanager
def _serving(binary: str, name: str, tmp: Path) -> Iterator[str]:
    """``fastagent start <name>`` on a free port; yields its base URL, stops it (SIGTERM) after."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FASTAGENT_")}
    proc = subprocess.Popen(
        [binary, "start", name, "--port", "0", "--bind", "127.0.0.1", "--model", "scripted/echo"],
        cwd=tmp,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield f"http://127.0.0.1:{_listen_port(proc)}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _answer(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode()


def _status(url: str, body: bytes, headers: dict[str, str]) -> int:
    return _answer(url, body, headers)[0]


def _listen_port(proc: subprocess.Popen[str]) -> int:
    """The port from the ``http host on`` line; stderr is drained by a thread from then on."""
    return int(_wait_line(proc, r"http host on 127\.0\.0\.1:(\d+)").group(1))


def _wait_line(proc: subprocess.Popen[str], pattern: str) -> re.Match[str]:
    """The first stderr line matching ``pattern``; stderr is drained by a thread from then on."""
    assert proc.stderr is not None
    lines: queue.Queue[str] = queue.Queue()
    stream = proc.stderr
    threading.Thread(target=lambda: [lines.put(line) for line in stream], daemon=True).start()
    deadline = time.monotonic() + 30
    seen = ""
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=0.5)
        except queue.Empty:
            check(proc.poll() is None, "the server exited before listening", seen)
            continue
        seen += line
        found = re.search(pattern, line)
        if found:
            return found
    raise SmokeFailure(f"no /{pattern}/ within 30 s: {seen}")


def smoke_web_chat(binary: str, tmp: Path) -> None:
    """``dev --no-watch`` serves the page, every file it names, and the plane it talks to."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FASTAGENT_")}
    proc = subprocess.Popen(
        [
            binary,
            "dev",
            "mini",
            "--no-watch",
            "--port",
            "0",
            "--bind",
            "127.0.0.1",
            "--model",
            "scripted/echo",
        ],
        cwd=tmp,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        found = _wait_line(proc, r"web chat: (http://127\.0\.0\.1:\d+)/#token=(\S+)")
        base, token = found.group(1), found.group(2)
        with urllib.request.urlopen(f"{base}/", timeout=10) as response:
            page = response.read().decode()
        files = re.findall(r'(?:src|href)="(webchat/[^"]+)"', page)
        check("webchat/js/app.js" in files, "GET / names the page's script", page[:300])
        pending, seen = list(files), set()
        while pending:
            name = pending.pop()
            if name in seen:
                continue
            seen.add(name)
            with urllib.request.urlopen(f"{base}/{name}", timeout=10) as response:
                body = response.read().decode()
            folder = name.rsplit("/", 1)[0]
            pending += [f"{folder}/{m}" for m in re.findall(r'from "\./([^"]+)"', body)]
        check(len(seen) >= 8, "the page's files", str(sorted(seen)))
        auth = {"Authorization": f"Bearer {token}", "content-type": "application/json"}
        body = json.dumps({"session": "web", "text": "hello", "detach": True}).encode()
        request = urllib.request.Request(f"{base}/control/invoke", data=body, headers=auth)
        with urllib.request.urlopen(request, timeout=10) as response:
            check(json.loads(response.read()).get("ok") is True, "a detached POST /control/invoke")
        said = ""
        for _ in range(100):
            request = urllib.request.Request(f"{base}/control/sessions/web/entries", headers=auth)
            with urllib.request.urlopen(request, timeout=10) as response:
                entries = json.loads(response.read())["entries"]
            said = " ".join(e["data"].get("text", "") for e in entries if e["kind"] == "assistant")
            if said:
                break
            time.sleep(0.1)
        check(said == "echo: hello", "the page's run through the plane", said)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    print(f"ok  web chat (dev --no-watch: GET /, {len(seen)} files, the plane with its token)")


def smoke_chat(binary: str, tmp: Path) -> None:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {k: v for k, v in os.environ.items() if not k.startswith("FASTAGENT_")}
    env["TERM"] = "xterm-256color"
    proc = subprocess.Popen(
        [binary, "chat", "mini", "--model", "scripted/echo"],
        cwd=tmp,
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
    )
    os.close(slave)
    screen = b""

    def read_until(needle: str, timeout: float = 30) -> None:
        nonlocal screen
        deadline = time.monotonic() + timeout
        while needle not in _plain(screen):
            check(time.monotonic() < deadline, f"chat: no {needle!r} on screen", _plain(screen)[-2000:])
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    chunk = b""
                screen += chunk
                if b"\x1b[6n" in chunk:  # answer cursor-position requests like a terminal
                    os.write(master, b"\x1b[1;1R")
            check(proc.poll() is None or needle in _plain(screen), "chat exited early", _plain(screen))

    try:
        read_until("› ")
        os.write(master, b"hello from a terminal\r")
        read_until("echo: hello from a terminal")
        os.write(master, b"\x04")
        proc.wait(timeout=15)
        check(proc.returncode == 0, f"chat exited {proc.returncode} on Ctrl+D")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    print("ok  chat (in a pseudo-terminal)")


_ANSI = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[=>()][0-9A-Za-z]?")


def _plain(raw: bytes) -> str:
    return _ANSI.sub("", raw.decode("utf-8", "replace")).replace("\r", "")


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: smoke_binary.py <path to the fastagent binary>", file=sys.stderr)
        return 2
    binary = str(Path(sys.argv[1]).resolve())
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="fastagent-smoke-") as tmp:
        try:
            smoke_cli(binary, Path(tmp))
            smoke_start(binary, Path(tmp))
            smoke_channels(binary, Path(tmp))
            smoke_slack_feishu(binary, Path(tmp))
            smoke_web_chat(binary, Path(tmp))
            smoke_chat(binary, Path(tmp))
        except (SmokeFailure, subprocess.TimeoutExpired, OSError, ValueError, KeyError) as exc:
            print(f"binary smoke test FAILED: {exc}", file=sys.stderr)
            return 1
    print(f"binary smoke test passed in {time.monotonic() - started:.1f} s: {binary}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
