"""``fastagent chat``: the terminal chat host.

Chat is a caller of the contract like any other host: it opens the same assembled agent that
``dev`` / ``start`` serve (:func:`fastagent_cli.assembly.open_agent_dir`), uses the same session
store, and drives every turn through ``agent.invoke(scope, prompt)``. What the terminal shows of a
run comes from the session's live events, as in ``attach``: one renderer for both.

* :mod:`.app`: the one terminal app of chat and ``attach`` (:class:`~.app.SessionApp`, one main
  loop over a session link) and its :class:`~.app.Side`: :mod:`.chat_side` (chat's: local, it
  drives its runs) or :mod:`.attach.side` (attach's: remote, it follows the session's runs);
* :mod:`.transcript`: session events and entries into lines (chat's runs and attach's);
* :mod:`.render`: rich output (streamed Markdown, thinking, tool lines);
* :mod:`.controller`: the chat's state and actions, shared by the terminal and plain modes;
* :mod:`.commands`: slash commands and their completion;
* :mod:`.plain`: the no-TTY mode (prompts line by line from stdin, plain text out).

Nothing here is imported until ``fastagent chat`` runs (rich and prompt-toolkit are heavy).
"""
