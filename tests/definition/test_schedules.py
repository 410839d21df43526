"""``schedules/<name>.toml`` discovery: each kind of broken file is one diagnostic naming the file
and the problem, and the other schedules still load (features J1, J2)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastagent_cli.definition.schedules import Schedule, load_schedules

GOOD = 'cron = "0 9 * * *"\nprompt = "digest"\n'


def write(agent: Path, files: dict[str, str | bytes]) -> None:
    for name, text in files.items():
        path = agent / "schedules" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")


def test_a_schedule_file_and_its_defaults(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "daily-digest.toml": GOOD,
            "paris.toml": 'cron = "30 8 * * 1-5"\ntz = "Europe/Paris"\n'
            + 'prompt = """\nLine one.\nLine two.\n"""\n',
        },
    )
    found = load_schedules(tmp_path)
    assert found.failures == []
    assert found.schedules == [
        Schedule("daily-digest", "0 9 * * *", "UTC", "digest", "schedules/daily-digest.toml"),
        Schedule("paris", "30 8 * * 1-5", "Europe/Paris", "Line one.\nLine two.\n", "schedules/paris.toml"),
    ]
    assert found.schedules[0].session == "schedule:daily-digest"
    assert found.directory == tmp_path / "schedules"


def test_no_directory_is_no_schedules(tmp_path: Path) -> None:
    found = load_schedules(tmp_path)
    assert (found.schedules, found.failures) == ([], [])


@pytest.mark.parametrize(
    ("file", "text", "error"),
    [
        (
            "syntax.toml",
            'cron = "0 9 * * *\nprompt = "x"\n',
            "TOML syntax error at line 1, column 18: Illegal character",
        ),
        ("nocron.toml", 'prompt = "x"\n', 'missing "cron" (a 5-field cron expression such as "0 9 * * *")'),
        ("noprompt.toml", 'cron = "0 9 * * *"\n', 'missing "prompt" (the instruction each run starts with)'),
        (
            "typo.toml",
            'crn = "0 9 * * *"\nprompt = "x"\n',
            'unknown key "crn"; did you mean "cron"? (valid keys: cron, tz, prompt)',
        ),
        ("extra.toml", GOOD + 'session = "mine"\n', 'unknown key "session" (valid keys: cron, tz, prompt)'),
        ("badcron.toml", 'cron = "0 25 * * *"\nprompt = "x"\n', 'invalid cron "0 25 * * *": '),
        ("fields.toml", 'cron = "0 9 * *"\nprompt = "x"\n', 'cron "0 9 * *" has 4 field(s); it needs 5'),
        (
            "badtz.toml",
            GOOD + 'tz = "Europe/Pariss"\n',
            'unknown time zone "Europe/Pariss" (use an IANA name',
        ),
        ("numbertz.toml", GOOD + "tz = 1\n", '"tz" must be an IANA time zone name such as "Europe/Paris"'),
        ("emptyprompt.toml", 'cron = "0 9 * * *"\nprompt = "  "\n', '"prompt" must be a non-empty string'),
        ("intcron.toml", 'cron = 9\nprompt = "x"\n', '"cron" must be a non-empty string'),
        ("wake.toml", GOOD, '"wake" is a reserved schedule name (the self-scheduling audit uses it)'),
        ("bad name.toml", GOOD, '"bad name" is not a valid schedule name'),
        ("latin1.toml", b'cron = "0 9 * * *"\nprompt = "caf\xe9"\n', "it is not UTF-8 text"),
        (
            "digest.ts",
            "export default defineSchedule({})\n",
            "not a schedule file: schedules are schedules/<name>.toml (rename it to digest.ts.disabled",
        ),
    ],
)
def test_each_kind_of_broken_file_is_isolated(
    tmp_path: Path, file: str, text: str | bytes, error: str
) -> None:
    write(tmp_path, {"ok.toml": GOOD, file: text})
    found = load_schedules(tmp_path)
    assert found.names == ["ok"]  # the others keep working
    [failure] = found.failures
    assert failure.file == f"schedules/{file}"
    assert failure.error.startswith(error), failure.error
    assert failure.message == f"schedules/{file}: {failure.error} (skipped)"
    assert found.failure_for(Path(file).stem) == failure


def test_disabled_hidden_and_note_files_are_ignored(tmp_path: Path) -> None:
    write(tmp_path, {"ok.toml": GOOD, "old.toml.disabled": "junk", ".swp.toml": "junk", "README.md": "notes"})
    (tmp_path / "schedules" / "sub").mkdir()
    found = load_schedules(tmp_path)
    assert (found.names, found.failures) == (["ok"], [])
