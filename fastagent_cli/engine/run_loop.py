"""A run: the opening prompt's turn, then its continuations, written to the session as it goes.

::

    user message -> [model -> tools]* -> (steer? -> user message -> ...) -> end of turn
      -> compaction if the context passed its threshold -> follow-up? -> next turn ... -> settle

* Each turn has at most ``max_tool_rounds`` tool rounds; then the next request withdraws the
  tools and appends a user note that the budget is exhausted, and a tool call in that answer
  fails the run (asyncai's rule). A follow-up starts a fresh turn with a fresh budget.
* Steering is taken one prompt at a time after each model answer and its tool batch (never
  cutting a batch short), before the next model call; follow-ups one at a time when the turn
  would otherwise end, except coalescing input (notices, streamed lines), taken all at once:
  N of them give one more turn, after the answer they arrived during (see :mod:`.runs`).
* A notice is recorded as a pi ``custom_message`` (``customType: "fastagent:notice"``, the text
  the model reads as ``content``, ``details: {source, text}``), never as a user message.
* A context-overflow error compacts the session once and retries the request; a second one
  fails the run. After each turn the run compacts when the context passed
  ``context_window - reserve_tokens`` (inside the run: the session reads ``running``), and so
  does a run whose opening prompts would take the context past it; a compaction made for a prompt
  keeps less of the newest history, so that the prompt fits beside what is kept.
* Every request asks for no more output than the model's context window leaves after its input
  (:mod:`fastagent_cli.models.context_budget`); a request that would leave no room for an answer
  is not sent: it counts as an overflow (compact once, then fail saying what to do). The opening
  prompt is checked before it is stored, so a prompt that can never fit does not stay in the
  session to be re-sent by every later run.
* A prompt that passed the check is announced (``user_message``) at once but stored once the
  model starts answering it (or the request fails for another reason, or the run is aborted):
  when the server refuses it as too long (the estimate was short) and one compact-and-retry does
  not help, it is not stored, so it does not poison every later turn of the session.
* Compaction is announced: ``compaction_started{reason, tokens}`` (the context's estimated size
  now, system prompt and tools included) and ``compaction_finished{summary, tokensBefore,
  tokensAfter}`` (or ``{error}`` / ``{aborted: true}``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from fastagent_cli.contract import Prompt
from fastagent_cli.control import NOTICE_TYPE, InputItem, SessionEvent
from fastagent_cli.engine.compaction import OVERFLOW_RECOVERY_FAILED
from fastagent_cli.engine.images import fit_prompt
from fastagent_cli.engine.output import OutputState
from fastagent_cli.engine.run_compaction import compact_in_run
from fastagent_cli.engine.run_request import (
    build_request,
    fit,
    fit_of,
    notice_content,
    tool_calls,
    user_message,
)
from fastagent_cli.engine.server_ratio import recorded_server_ratio
from fastagent_cli.engine.tool_batch import run_tool_batch
from fastagent_cli.engine.turn import Emit, TurnFailure, TurnOutcome, TurnSetup, add_usage, request_model
from fastagent_cli.messages import AssistantMessage, Message, ToolCall, UserMessage, empty_usage
from fastagent_cli.models.context_budget import context_tokens as request_tokens
from fastagent_cli.models.context_budget import estimate_tokens, learn_server_ratio
from fastagent_cli.models.structured import output_instruction
from fastagent_cli.models.token_counts import conversation_counts
from fastagent_cli.models.types import ModelRequest
from fastagent_cli.sessions.record import entry_message

__all__ = ["notice_content", "run_loop", "user_message"]


class _Run:
    def __init__(self, setup: TurnSetup, emit: Emit) -> None:
        self.setup = setup
        self.emit = emit
        self.messages: list[Message] = list(setup.request.messages)
        self.usage = empty_usage()
        self.rounds = 0
        self.overflow_recovered = False
        self.unstored: tuple[str, UserMessage] | None = None
        """The admitted prompt not written yet, and the entry id it was announced with."""
        model = setup.request.model
        self.output = None if setup.output is None else OutputState(setup.output, model.api, model.compat)
        self.system = setup.request.system
        if self.output is not None:
            note = output_instruction(self.output.format, self.output.mode)
            self.system = f"{self.system}\n\n{note}" if self.system else note
        self.server_ratio: float | None = None
        """What the server counts against the estimate, learnt from the last report (see
        :func:`recorded_server_ratio`); it stands in for a report where the context has none."""
        self.server_ratio = recorded_server_ratio(setup.record, self.request(False))

    async def admit(self, prompt: Prompt) -> None:
        """The opening prompt: stored only once a request carrying it fits the window (after one
        compaction if needed)."""
        prompt = await fit_prompt(prompt, self.setup.request.model)
        message = user_message(prompt)
        while True:
            try:
                fit(self.request(False, [*self.messages, message]))
                break
            except TurnFailure:
                if (
                    self.overflow_recovered
                    or not self.setup.compaction.enabled
                    or not self.could_fit(message)
                ):
                    raise  # (a prompt larger than the window alone: compacting would only lose history)
                self.overflow_recovered = True
                if not await self.compact("overflow", estimate_tokens(message)):
                    raise
        self.store_prompt()  # an earlier one that never reached a model call
        entry_id = self.setup.record.new_id()
        self.unstored = (entry_id, message)
        self.messages.append(message)
        # Announced now (watchers show the prompt as the run takes it), written with this id once
        # its request gets anywhere.
        self.emit(self.setup.run.event("user_message", entryId=entry_id, text=prompt.text))

    def could_fit(self, message: UserMessage) -> bool:
        """Whether a request with ``message`` and no history would fit the window."""
        return fit_of(self.request(False, [message]), None, kept=False).fits

    def store_prompt(self) -> None:
        """Write the admitted prompt (once its request got anywhere)."""
        if self.unstored is None:
            return
        entry_id, message = self.unstored
        self.unstored = None
        self.setup.record.append("message", id=entry_id, message=message)

    async def add_user(self, prompt: Prompt) -> None:
        prompt = await fit_prompt(prompt, self.setup.request.model)
        self.store_prompt()
        message = user_message(prompt)
        entry = self.setup.record.append_message(message)
        self.messages.append(message)
        self.emit(self.setup.run.event("user_message", entryId=entry["id"], text=prompt.text))

    async def add_input(self, item: InputItem) -> None:
        if isinstance(item, Prompt):
            await self.admit(item)
            return
        self.store_prompt()  # the record keeps the inputs' order
        entry = self.setup.record.append(
            "custom_message",
            customType=NOTICE_TYPE,
            content=[{"type": "text", "text": notice_content(item)}],
            display=True,
            details=item.to_json(),
        )
        message = entry_message(entry)
        if message is not None:
            self.messages.append(message)
        event = self.setup.run.event("notice", entryId=entry["id"], source=item.source, text=item.text)
        self.emit(event)

    def request(self, exhausted: bool, messages: Sequence[Message] | None = None) -> ModelRequest:
        history = self.messages if messages is None else messages
        return build_request(self.setup, self.system, history, exhausted, self.server_ratio)

    def _emit_storing(self, event: SessionEvent) -> None:
        """``emit`` for a model request: its first event (the answer started, or a retry was
        scheduled) means the server took the prompt, which is then written before it."""
        self.store_prompt()
        self.emit(event)

    async def answer(self, exhausted: bool) -> AssistantMessage:
        """One model answer, recorded; on a context overflow, compact once and ask again."""
        while True:
            try:
                request = fit(self.request(exhausted))
                if self.setup.meter is not None:  # refused before it is sent (budget_exceeded)
                    await self.setup.meter.check(self.usage, request)
                assistant = await request_model(self.setup, request, self._emit_storing)
            except asyncio.CancelledError:
                self.store_prompt()  # an aborted turn keeps its prompt, as it always did
                raise
            except TurnFailure as exc:
                if not exc.overflow:
                    self.store_prompt()
                    raise
                if not self.setup.compaction.enabled:
                    raise
                if self.overflow_recovered:
                    raise TurnFailure(
                        f"{OVERFLOW_RECOVERY_FAILED} {exc.message}", exc.retryable, overflow=True
                    ) from exc
                self.overflow_recovered = True
                if not await self.compact("overflow"):
                    raise  # nothing to compact (or the summary failed): the error stands
                continue
            self.store_prompt()
            entry = self.setup.record.append_message(assistant)
            self.learn(request, assistant)
            self.messages.append(assistant)
            add_usage(self.usage, assistant["usage"])
            if self.setup.meter is not None:
                await self.setup.meter.record(request.model.spec, assistant["usage"])
            self.emit(
                self.setup.run.event(
                    "message_finished", entryId=entry["id"], stopReason=assistant["stopReason"]
                )
            )
            return assistant

    def learn(self, request: ModelRequest, assistant: AssistantMessage) -> None:
        """What the server counted for this request against the estimate: it measures the context
        after a compaction in this run (a later run learns it again from the record)."""
        counts = conversation_counts(request.memo)
        ratio = learn_server_ratio(request.system, request.messages, request.tools, assistant, counts)
        if ratio is not None:
            self.server_ratio = ratio

    async def compact(self, reason: str, incoming: int = 0) -> bool:
        """Compact inside the run (:func:`compact_in_run`); ``False`` when there was nothing to
        compact (or it failed: the run goes on with the history it has)."""
        waiting = None if self.unstored is None else self.unstored[1]
        messages = await compact_in_run(
            self.setup, self.emit, reason, self.context_size, incoming, waiting, self._relearn
        )
        if messages is None:
            return False
        self.messages = messages
        return True

    def _relearn(self, messages: list[Message]) -> None:
        """After a compaction inside the run: the rate the server counted at, from the record."""
        ratio = recorded_server_ratio(self.setup.record, self.request(False, messages))
        self.server_ratio = ratio or self.server_ratio

    async def resume(self, calls: list[ToolCall]) -> None:
        """Re-enter a turn from the record: finish the leaf's open tool calls (an approval was
        answered after a restart), then the turn goes on with the model."""
        await self.run_tools(calls)

    async def run_tools(self, calls: list[ToolCall]) -> None:
        """Run one batch of the model's tool calls; their results join the context."""
        setup = self.setup
        results = await run_tool_batch(
            calls,
            tools=setup.tools,
            activation=setup.activation,
            record=setup.record,
            cwd=setup.cwd,
            run=setup.run,
            emit=self.emit,
            tool_timeout=setup.tool_timeout,
            scope=setup.scope,
            approvals=setup.approvals,
        )
        self.messages.extend(results)

    async def turn(self) -> AssistantMessage:
        """Model answers and tool rounds until the turn ends (steering joins along the way)."""
        setup = self.setup
        rounds = 0
        while True:
            exhausted = rounds >= setup.max_tool_rounds
            assistant = await self.answer(exhausted)
            rounds += 1
            self.rounds += 1
            calls = tool_calls(assistant)
            output = self.output
            final = None if output is None else output.output_call(calls)
            answered = False
            if output is not None and final is not None:
                answered = output.take_call(calls, final, setup.record, self.messages)
            elif calls:
                if exhausted:
                    raise TurnFailure(
                        f"the model called a tool after the tool budget "
                        f"({setup.max_tool_rounds} rounds) was exhausted"
                    )
                await self.run_tools(calls)
            steer = setup.run.take_steering()
            if steer is not None:
                await self.add_user(steer)
            elif final is not None:
                if answered:
                    return assistant
            elif not calls and (output is None or output.take_text(assistant, setup.record, self.messages)):
                return assistant

    def context_size(self, messages: Sequence[Message] | None = None) -> int:
        """The context's estimated size, as the next request would measure it."""
        request = self.request(False, messages)
        counts = conversation_counts(request.memo)
        return request_tokens(request.messages, request.system, request.tools, request.server_ratio, counts)

    def over_threshold(self, incoming: int = 0) -> bool:
        window = self.setup.request.model.context_window
        return self.setup.compaction.over_threshold(self.context_size() + incoming, window)


async def run_loop(setup: TurnSetup, inputs: Sequence[InputItem], emit: Emit) -> TurnOutcome:
    """Run to the settle (``inputs`` open it, in order, as one turn); raise :class:`TurnFailure`
    (or a FastagentError) when the run fails."""
    state = _Run(setup, emit)
    # A context left too full (a failed run, a smaller model), or one the opening prompts would
    # fill: compact first, keeping room for them.
    prompts = [user_message(i) for i in inputs if isinstance(i, Prompt)]
    incoming = sum(estimate_tokens(m) for m in prompts)
    if state.over_threshold(incoming) and all(state.could_fit(m) for m in prompts):
        await state.compact("threshold", incoming)
    if setup.resume:
        await state.resume(setup.resume)
    for item in inputs:
        await state.add_input(item)
    while True:
        assistant = await state.turn()
        if state.over_threshold():
            await state.compact("threshold")
        follow_ups = setup.run.take_continuation()
        if not follow_ups:
            output = None if state.output is None else state.output.value
            return TurnOutcome(state.usage, assistant["stopReason"], state.rounds, output)
        for item in follow_ups:
            await state.add_input(item)
