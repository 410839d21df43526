"""``fastagent deploy docker|fly|railway``: artifacts, preflight gates, runbooks, and ``--run``.

Deploy has one meaning: bake the workspace, as it is, into an image that runs ``fastagent start``.
The artifacts land in the agent directory (plus one workspace-root ``.dockerignore``); a file is
regenerated only when it carries the ownership marker (:mod:`.artifacts`). :func:`~.facts.gather`
reads what the agent needs on a host, :mod:`.preflight` turns that into warnings and gates, and
each host module (:mod:`.docker`, :mod:`.fly`, :mod:`.railway`) renders its files and runbook and
drives its CLI through an injectable :class:`~.runner.CliRunner`.
"""
