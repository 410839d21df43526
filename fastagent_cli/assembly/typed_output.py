"""``agent_output(Model)``: an agent whose every answer is a pydantic model.

::

    from pydantic import BaseModel
    from fastagent_cli import agent_output, create_agent

    class Person(BaseModel):
        name: str
        age: int

    @agent_output(Person)
    def build() -> Agent:
        return create_agent(model="openai/gpt-5-mini")

    people = build()
    ada = await people.run("s1", "Who wrote the first program?")   # a Person

It applies to an agent (``agent_output(Person)(agent)``) or to a function that builds one (then
calling it builds a typed agent). The typed agent is still an :class:`~fastagent_cli.contract.Agent`
(serve it with ``create_invoke_handler``): each prompt without a schema of its own gets the
model's JSON Schema, so the answer arrives checked in ``completed.data["output"]``;
:meth:`TypedAgent.run` returns it as the model, raising :class:`~fastagent_cli.contract.AgentFailure`
(``code: invalid_output``) when it does not validate.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any, Generic, Protocol, TypeVar

from fastagent_cli.contract import (
    INVALID_OUTPUT_CODE,
    Agent,
    AgentEvent,
    AgentFailure,
    Prompt,
    Scope,
    as_prompt,
    as_scope,
    collect,
)

__all__ = ["TypedAgent", "agent_output"]


class _Model(Protocol):
    """What is used of a pydantic model class."""

    @classmethod
    def model_json_schema(cls) -> dict[str, Any]: ...

    @classmethod
    def model_validate(cls, obj: Any) -> Any: ...


M = TypeVar("M", bound=_Model)


class TypedAgent(Generic[M]):
    """An agent whose answers are ``model`` instances."""

    def __init__(self, agent: Agent, model: type[M]) -> None:
        self.agent = agent
        self.model = model
        self.schema: dict[str, Any] = dict(model.model_json_schema())

    def invoke(self, scope: Scope | str, prompt: Prompt | str) -> AsyncIterator[AgentEvent]:
        asked = as_prompt(prompt)
        if asked.output_schema is None:
            asked = replace(asked, output_schema=self.schema)
        return self.agent.invoke(as_scope(scope), asked)

    async def run(self, scope: Scope | str, prompt: Prompt | str) -> M:
        """One turn; its answer as the model (AgentFailure when the turn fails or it does not validate)."""
        result = await collect(self.invoke(scope, prompt))
        output = result.data.get("output") if isinstance(result.data, dict) else None
        try:
            return self.model.model_validate(output)  # type: ignore[no-any-return]
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            detail = " ".join(str(exc).split())
            raise AgentFailure(
                f"the answer is not a valid {self.model.__name__}: {detail}", False, INVALID_OUTPUT_CODE
            ) from None

    async def aclose(self) -> None:
        close = getattr(self.agent, "aclose", None)
        if close is not None:
            await close()

    def __getattr__(self, name: str) -> Any:  # hub, runs, ...: the wrapped agent's
        return getattr(self.agent, name)


def agent_output(model: type[M]) -> Callable[[Any], Any]:
    """Type an agent's answers as ``model`` (a pydantic model class): applied to an agent, or
    to a function returning one."""
    if not callable(getattr(model, "model_json_schema", None)):
        raise TypeError(f"agent_output needs a pydantic model class, not {model!r}")

    def apply(target: Any) -> Any:
        if isinstance(target, Agent):
            return TypedAgent(target, model)
        if callable(target):

            @functools.wraps(target)
            def build(*args: Any, **kwargs: Any) -> TypedAgent[M]:
                return TypedAgent(target(*args, **kwargs), model)

            return build
        raise TypeError(f"agent_output applies to an agent or a function returning one, not {target!r}")

    return apply
