"""``@agent_output(Model)``: a pydantic model types an agent's answers, through the scripted model
(which is asked in the system prompt only: the retry loop does the rest)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, field_validator

from fastagent_cli import AgentFailure, Completed, ScriptedModel, ScriptedRequest, agent_output, create_agent
from fastagent_cli.contract import Agent, Prompt, Scope
from tests.conformance.suite import drain


class Person(BaseModel):
    name: str
    age: int

    @field_validator("name")
    @classmethod
    def _capitalised(cls, value: str) -> str:
        if not value[:1].isupper():
            raise ValueError("the name must be capitalised")
        return value


def respond(request: ScriptedRequest) -> str:
    assert "JSON Schema" in request.system and '"age"' in request.system
    if "lower" in request.last_user_text:
        return '{"name": "ada", "age": 36}'
    if "not of type" in request.last_user_text:  # the validation error, sent back
        return '{"name": "Ada", "age": 36}'
    return '{"name": "Ada", "age": "36 years"}'


@agent_output(Person)
def build() -> Agent:
    return create_agent(model=ScriptedModel.from_callable(respond))


async def test_run_returns_the_model_after_one_retry() -> None:
    people = build()
    try:
        ada = await people.run("s1", "Who wrote the first program?")
        assert isinstance(ada, Person) and ada == Person(name="Ada", age=36)
        events = await drain(people.invoke(Scope("s2"), "again"))
        assert isinstance(events[-1], Completed) and events[-1].data["output"]["age"] == 36
        with pytest.raises(AgentFailure) as failure:  # the schema holds, the model's validator not
            await people.run("s3", "lower case please")
        assert (
            failure.value.code == "invalid_output" and "the name must be capitalised" in failure.value.details
        )
    finally:
        await people.aclose()


async def test_applied_to_an_agent_and_a_prompts_own_schema_wins() -> None:
    agent = create_agent(
        model=ScriptedModel.from_callable(lambda r: '{"n": 1}' if "object" in r.system else "x")
    )
    typed = agent_output(Person)(agent)
    try:
        events = await drain(typed.invoke(Scope("s"), Prompt("count", output_schema={"type": "object"})))
        assert isinstance(events[-1], Completed) and events[-1].data["output"] == {"n": 1}
    finally:
        await typed.aclose()


def test_it_needs_a_pydantic_model() -> None:
    with pytest.raises(TypeError, match="needs a pydantic model class"):
        agent_output(dict)  # type: ignore[arg-type]
