"""Credentials: the ``auth.json`` store (:mod:`.store`: 0600 in a 0700 dir, atomic, locked), which
file a command uses (:mod:`.paths`), verifying an API key with one request (:mod:`.verify`), the
deploy seed (:mod:`.seed`) and subscription logins (:mod:`.oauth`).

Import the module you need: every command resolves its credential file, few store or verify a key.
"""
