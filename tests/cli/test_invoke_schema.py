"""``fastagent invoke --schema`` and ``[output] schema``, run as the real process: the validated
object alone on stdout, ``completed.data.output`` with ``--json``, exit 1 when no valid object came
back, exit 2 for a schema that cannot be read; against the scripted model and the fake OpenAI and
Anthropic servers."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.conftest import AgentFactory, RunCli
from tests.fakes.fake_providers import FakeAnthropic, FakeOpenAI, FakeProvider
from tests.fakes.wire_builders import FakeCall, anthropic_reply, openai_reply

SCRIPT = {
    "rules": [
        {"match": "is not of type", "steps": ['{"name": "Ada", "age": 36}']},
        {"match": "/stubborn|not a JSON object/", "steps": ["I would rather not."]},
        {"match": "sloppy", "steps": ['{"name": "Ada", "age": "old"}']},
        {"steps": ['Sure: ```json\n{"name": "Ada", "age": 36}\n```']},
    ]
}


def scripted(make_agent: AgentFactory, config: str = "", files: dict[str, str] | None = None) -> Path:
    return make_agent(
        {"scripts/p.json": json.dumps(SCRIPT), **(files or {})}, model="scripted/p", config=config
    )


def test_concise_schema_prints_the_object_alone(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("invoke", "who?", str(scripted(make_agent)), "--schema", "name str, age int")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"name": "Ada", "age": 36}
    assert done.stdout.endswith("}\n")


def test_a_violation_is_sent_back_and_the_second_answer_counts(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    done = run_cli("invoke", "sloppy", str(scripted(make_agent)), "--schema", "name, age int")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"name": "Ada", "age": 36}


def test_no_valid_object_is_exit_1(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = scripted(make_agent, files={"person.json": json.dumps({"type": "object", "required": ["name"]})})
    done = run_cli("invoke", "stubborn", str(agent), "--schema", str(agent / "person.json"))
    assert done.returncode == 1
    assert done.stdout == ""
    assert "[fastagent] failed: the answer did not match the schema after 3 attempts" in done.stderr
    as_json = run_cli("invoke", "stubborn", str(agent), "--schema", '{"type": "object"}', "--json")
    assert as_json.returncode == 1
    last = json.loads(as_json.stdout.splitlines()[-1])
    assert last["type"] == "failed" and last["code"] == "invalid_output" and last["retryable"] is False


def test_json_puts_the_object_in_completed_data(make_agent: AgentFactory, run_cli: RunCli) -> None:
    done = run_cli("invoke", "who?", str(scripted(make_agent)), "--schema", "name str, age int", "-j")
    assert done.returncode == 0, done.stderr
    completed = json.loads(done.stdout.splitlines()[-1])
    assert completed["type"] == "completed"
    assert completed["data"]["output"] == {"name": "Ada", "age": 36}


def test_output_schema_in_the_config_is_the_default(make_agent: AgentFactory, run_cli: RunCli) -> None:
    person = {"type": "object", "properties": {"age": {"type": "integer"}}, "required": ["age"]}
    agent = scripted(make_agent, '[output]\nschema = "person.json"\n', {"person.json": json.dumps(person)})
    done = run_cli("invoke", "who?", str(agent))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"name": "Ada", "age": 36}
    plain = run_cli("invoke", "stubborn", str(agent), "--schema", "{}")  # --schema wins
    assert plain.returncode == 1 and "not a JSON object" in plain.stderr


def test_bad_schemas_are_usage_errors(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = scripted(make_agent)
    for schema, message in [
        ("name strin", "unknown type 'strin' in schema field 'name' (int, float, str, bool)"),
        ('{"type": "object",', "the inline schema is not valid JSON"),
        ('{"type": "string"}', 'the answer must be a JSON object: its schema has "type": "string"'),
        ('{"type": 5}', "the inline schema is not a valid JSON Schema: 5 is not valid under any"),
        ("missing.json", "cannot read the schema file missing.json"),
    ]:
        done = run_cli("invoke", "who?", str(agent), "--schema", schema)
        assert done.returncode == 2, (schema, done.stderr)
        assert message in done.stderr, (schema, done.stderr)
        assert "Traceback" not in done.stderr


def test_a_bad_config_schema_is_a_config_error(make_agent: AgentFactory, run_cli: RunCli) -> None:
    agent = scripted(make_agent, '[output]\nschema = "name strin"\n')
    done = run_cli("invoke", "who?", str(agent))
    assert done.returncode != 0 and "output.schema" in done.stderr and "unknown type" in done.stderr


def provider_agent(make_agent: AgentFactory, fake: FakeProvider, api: str) -> Path:
    models = {
        "providers": {"fake": {"baseUrl": fake.base_url, "api": api, "apiKey": "k", "models": [{"id": "m"}]}}
    }
    config = "coding_tools = false\n[engine]\nmax_retries = 0\n"
    return make_agent({"models.json": json.dumps(models)}, model="fake/m", config=config)


async def test_openai_native_and_a_model_that_keeps_violating(
    make_agent: AgentFactory, run_cli: RunCli
) -> None:
    async with FakeOpenAI() as fake:
        agent = provider_agent(make_agent, fake, "openai-completions")
        fake.enqueue_stream(openai_reply('{"name": "Ada", "age": 36}'))
        done = await asyncio.to_thread(run_cli, "invoke", "who?", str(agent), "--schema", "name str, age int")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {"name": "Ada", "age": 36}
        assert fake.requests[0].body["response_format"]["json_schema"]["strict"] is True
        for _ in range(3):
            fake.enqueue_stream(openai_reply('{"name": "Ada"}'))
        done = await asyncio.to_thread(run_cli, "invoke", "who?", str(agent), "--schema", "name str, age int")
        assert done.returncode == 1 and done.stdout == ""
        assert "'age' is a required property" in done.stderr
        assert len(fake.requests) == 4


async def test_anthropic_tool_forcing_through_the_cli(make_agent: AgentFactory, run_cli: RunCli) -> None:
    async with FakeAnthropic() as fake:
        agent = provider_agent(make_agent, fake, "anthropic-messages")
        fake.enqueue_stream(
            anthropic_reply(tool_calls=[FakeCall("final_result", {"name": "Ada", "age": 36})])
        )
        done = await asyncio.to_thread(run_cli, "invoke", "who?", str(agent), "--schema", "name str, age int")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {"name": "Ada", "age": 36}
        assert fake.requests[0].body["tool_choice"] == {"type": "tool", "name": "final_result"}
