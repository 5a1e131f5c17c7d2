"""The collector's read of each tracked workflow's triggers (collector.triggers): `on:` in
its forms, schedules with a timezone."""

from __future__ import annotations

from collector.triggers import parse_triggers


def test_on_in_every_form_and_a_schedule_with_its_timezone():
    assert parse_triggers("on: push\njobs: {}") == {"events": ["push"], "schedule": []}
    assert parse_triggers("on: [push, pull_request]") == {
        "events": ["push", "pull_request"],
        "schedule": [],
    }
    text = (
        "on:\n  schedule:\n    - cron: '0 2 * * *'\n      timezone: Asia/Shanghai\n"
        "    - cron: '30 4 * * 0'\n  workflow_dispatch:\n"
    )
    assert parse_triggers(text) == {
        "events": ["schedule", "workflow_dispatch"],
        "schedule": [
            {"cron": "0 2 * * *", "timezone": "Asia/Shanghai"},
            {"cron": "30 4 * * 0", "timezone": None},
        ],
    }
    assert parse_triggers("jobs: [") is None and parse_triggers("name: x") is None
