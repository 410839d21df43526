"""GitHub webhooks -> agent turns (written by `fastagent add github`).

fastagent mounts POST /webhook for this file: a delivery signed with GITHUB_WEBHOOK_SECRET (.env)
is verified, answered 202, and each Intent that on(event) returns runs as one turn in the
background. The channel only starts turns: to comment, label or review, give the agent tools (an
MCP GitHub server, the gh CLI through bash...) and a token.

With GITHUB_TOKEN in .env (Issues and Pull requests: read and write), a tool call that asks for
approval in a turn about an issue or pull request is asked there as a comment; people with write
access (or on [approval] allow_from) answer with a comment: /approve, or /deny <reason>.

Set the webhook in the repository: Settings -> Webhooks -> Add webhook, Payload URL
https://<public host>/webhook (`fastagent dev --tunnel` prints it), content type application/json,
Secret = GITHUB_WEBHOOK_SECRET.
"""

from __future__ import annotations

from fastagent_cli.channels import GithubEvent, Intent, github_channel


def on(event: GithubEvent) -> list[Intent]:
    """Map a verified delivery to the turns to run (an empty list ignores it).

    A distinct session per delivery keeps independent reviews apart (two turns on one session at
    once: the second fails as busy).
    """
    if event.event == "pull_request" and event.action == "opened":
        pull = event.payload["pull_request"]
        repository = event.payload["repository"]["full_name"]
        return [
            Intent(session=event.delivery_id, text=f"Review pull request #{pull['number']} in {repository}.")
        ]
    return []


channel = github_channel(on=on)
