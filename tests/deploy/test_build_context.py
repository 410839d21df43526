"""The build context ``deploy docker`` writes builds, without Docker: what the Dockerfile installs
installs offline from the context (``pip install --no-index``) into a fresh virtual environment,
and the image's command line starts ``fastagent start`` on a copy of the context.

The fresh environment sees this test environment's third-party packages (a ``.pth`` to a folder
of links that leaves fastagent out), so only the shipped wheel is installed: fastagent is the
package no index has.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from fastagent_cli._version import __version__
from fastagent_cli.deploy.dockerignore import DockerIgnore
from tests.conftest import RunCli
from tests.serving.serving_proc import ServerProcess, free_port, get, invoke

WHEEL = f"fastagent_cli-{__version__}-py3-none-any.whl"


def _dockerfile(
    path: Path,
) -> tuple[dict[str, str], dict[str, str], list[list[str]], dict[str, str], list[str]]:
    """``(copies dest->src, args, pip installs, env, cmd)`` of a generated Dockerfile."""
    copies: dict[str, str] = {}
    args: dict[str, str] = {}
    installs: list[list[str]] = []
    env: dict[str, str] = {}
    cmd: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        word, _, rest = line.partition(" ")
        if word == "COPY" and rest != ". .":
            src, dest = rest.split()
            copies[dest] = src
        elif word == "ARG":
            name, _, value = rest.partition("=")
            args[name] = json.loads(value)
        elif word == "RUN" and rest.startswith("pip install "):
            installs.append(shlex.split(rest)[2:])
        elif word == "ENV":
            for item in shlex.split(rest):
                name, _, value = item.partition("=")
                env[name] = value
        elif word == "CMD":
            cmd = json.loads(rest)
    return copies, args, installs, env, cmd


def _copy_context(context: Path, ignore: DockerIgnore, into: Path) -> None:
    """What Docker's context packer sends, copied (the ``.dockerignore`` rules applied)."""
    for path in sorted(context.rglob("*")):
        rel = path.relative_to(context).as_posix()
        if path.is_file() and not ignore.excludes(rel):
            target = into / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)


def _fresh_venv(root: Path) -> Path:
    venv = root / "fresh"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    deps = root / "deps"
    deps.mkdir()
    here = Path(sysconfig.get_paths()["purelib"])
    for entry in here.iterdir():
        name = entry.name.lower()
        if name.startswith(("fastagent", "__editable__", "_distutils_hack")) or name.endswith(".pth"):
            continue
        (deps / entry.name).symlink_to(entry)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "test-deps.pth").write_text(f"{deps}\n", encoding="utf-8")
    return venv


@pytest.mark.timeout(240)
async def test_the_build_context_installs_offline_and_starts(run_cli: RunCli, tmp_path: Path) -> None:
    assert run_cli("init", "bot", cwd=tmp_path).returncode == 0
    bot = tmp_path / "bot"
    plan = run_cli("deploy", "docker", str(bot), "--no-input")
    assert plan.returncode == 0, plan.stderr
    assert f"deploy ships it as fastagent/.fastagent-dist/{WHEEL} in the build context" in plan.stderr
    assert f"[fastagent] wrote fastagent/.fastagent-dist/{WHEEL}" in plan.stderr

    copies, args, installs, env, cmd = _dockerfile(bot / "fastagent" / "Dockerfile")
    assert installs == [["$FASTAGENT_PIP_SPEC"]]
    spec = args["FASTAGENT_PIP_SPEC"]
    source = copies[str(Path(spec).parent) + "/"]  # COPY <context path> /tmp/fastagent-dist/
    wheel = bot / source
    assert wheel.name == WHEEL and Path(spec).name == WHEEL

    ignore = DockerIgnore((bot / "fastagent" / "Dockerfile.dockerignore").read_text(encoding="utf-8"))
    assert not ignore.excludes(source)  # the packer sends it
    app = tmp_path / "app"
    _copy_context(bot, ignore, app)
    assert (app / source).is_file()

    venv = _fresh_venv(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--no-index",
            str(app / source),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import fastagent_cli; print(fastagent_cli.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout.strip()
    assert where.startswith(str(venv)), where  # the shipped wheel, not this checkout

    await _starts(venv, app, env, cmd)

    # The same fastagent as an index would install it (pip's record without direct_url.json): the
    # image installs it from the index, and no wheel is shipped.
    [direct_url] = (venv / "lib").glob(
        f"python*/site-packages/fastagent_cli-{__version__}.dist-info/direct_url.json"
    )
    direct_url.unlink()
    again = tmp_path / "again"
    assert subprocess.run([str(venv / "bin" / "fastagent"), "init", str(again)], check=False).returncode == 0
    plan2 = subprocess.run(
        [str(venv / "bin" / "fastagent"), "deploy", "docker", str(again), "--no-input"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert plan2.returncode == 0, plan2.stderr
    text = (again / "fastagent" / "Dockerfile").read_text(encoding="utf-8")
    assert (
        f'ARG FASTAGENT_PIP_SPEC="fastagent-cli=={__version__}"' in text
        and "COPY fastagent/.fastagent-dist" not in text
    )
    assert not (again / "fastagent" / ".fastagent-dist").exists()


async def _starts(venv: Path, app: Path, env: dict[str, str], cmd: list[str]) -> None:
    """The image's CMD, run on the context copy with the fresh environment's fastagent."""
    assert cmd[:3] == ["fastagent", "start", "/app"], cmd
    port = free_port()
    argv = [str(venv / "bin" / cmd[0]), *(str(app) if a == "/app" else a for a in cmd[1:])]
    argv = ["127.0.0.1" if a == "0.0.0.0" else a for a in argv]  # tests listen on loopback only
    full_env = {**os.environ, **env, "PORT": str(port), "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
    process = await asyncio.create_subprocess_exec(
        *argv,
        cwd=app,
        env=full_env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    server = ServerProcess(process)
    try:
        assert await server.port() == port
        assert re.search(rf"agent: +bot \({re.escape(str(app / 'fastagent'))}\)$", server.text, re.M), (
            server.text
        )
        assert (await get(port))[0] == 200
        events = await invoke(port, "s1", "hello")
        assert events[-1].type == "completed", events
    finally:
        await server.aclose()


def test_the_wheel_is_rebuilt_byte_for_byte(run_cli: RunCli, tmp_path: Path) -> None:
    assert run_cli("init", "bot", cwd=tmp_path).returncode == 0
    first = run_cli("deploy", "docker", str(tmp_path / "bot"), "--no-input")
    assert first.returncode == 0, first.stderr
    wheel = tmp_path / "bot" / "fastagent" / ".fastagent-dist" / WHEEL
    body = wheel.read_bytes()
    again = run_cli("deploy", "docker", str(tmp_path / "bot"), "--no-input")
    assert f"[fastagent] kept fastagent/.fastagent-dist/{WHEEL} (unchanged)" in again.stderr
    assert wheel.read_bytes() == body
    names = zipfile.ZipFile(wheel).namelist()
    assert "fastagent_cli/cli/main.py" in names and "fastagent_cli/data/catalog.json" in names
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert f"fastagent_cli-{__version__}.dist-info/entry_points.txt" in names


def test_loopback_provider_urls_are_warned_about(run_cli: RunCli, tmp_path: Path) -> None:
    assert run_cli("init", "bot", cwd=tmp_path).returncode == 0
    agent = tmp_path / "bot" / "fastagent"
    (agent / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "myvllm": {
                        "baseUrl": "http://127.0.0.1:8000/v1",
                        "api": "openai-completions",
                        "apiKey": "$MYVLLM_API_KEY",
                        "models": [{"id": "qwen3"}],
                    },
                    "remote": {
                        "baseUrl": "https://llm.example.com/v1",
                        "api": "openai-completions",
                        "models": [{"id": "m"}],
                    },
                }
            }
        )
    )
    done = run_cli("deploy", "docker", str(tmp_path / "bot"), "--no-input")
    assert done.returncode == 0, done.stderr
    assert (
        "[fastagent] warn: models.json providers.myvllm baseUrl is http://127.0.0.1:8000/v1: inside the "
        "container that is the container itself, not this machine." in done.stderr
    )
    assert "llm.example.com" not in done.stderr

    toml = agent / "fastagent.toml"
    toml.write_text(toml.read_text().replace('model = "scripted/demo"', 'model = "ollama/llama3.2"'))
    done = run_cli("deploy", "fly", str(tmp_path / "bot"), "--no-input")
    assert "warn: the model ollama/llama3.2's provider URL is http://" in done.stderr, done.stderr
