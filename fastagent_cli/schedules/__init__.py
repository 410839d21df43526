"""The scheduler host: ``schedules/*.toml`` on their cron and the agent's own wake-ups.

:mod:`~fastagent_cli.schedules.host` is what ``dev`` / ``start`` run; it drives the agent through
the contract only (:mod:`~fastagent_cli.schedules.cron_loop`, :mod:`~fastagent_cli.schedules.wake_poll`)
and keeps its state behind the claims interface (:mod:`fastagent_cli.state.claims`).
"""
