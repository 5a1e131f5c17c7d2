"""``ciflake config show``: the effective configuration as TOML-like text, token hidden."""

from __future__ import annotations

from store.engine import safe_url
from store.settings import Config


def render_config(config: Config) -> str:
    lines = [
        f"# effective configuration (source: {config.source})",
        "[github]",
        f'repo = "{config.repo}"',
        f'api_url = "{config.api_url}"',
        f'token = "{"set" if config.token else "unset"}"  # from {config.token_source}'
        if config.token
        else 'token = "unset"',
        "",
        "[database]",
        f'url = "{safe_url(config.database_url)}"',
        "",
        "[collect]",
        f"interval_minutes = {config.interval_minutes}",
        f"trailing_days = {config.trailing_days}",
        f"since_days_before_first_event = {config.since_days_before_first_event}",
        f"log_workers = {config.log_workers}",
        f"window_days = {config.collect_window_days}",
        "",
        "[summary]",
        f'nightly_at = "{config.summary_nightly_at}"',
        f"pr = {config.summary_pr}",
        "",
        "[analytics]",
        f"window_days = {config.window_days}",
        f"first_runs = {config.first_runs}",
        f"min_runs = {config.min_runs}",
        f'default_branch = "{config.default_branch}"',
        f"job_name_strip = '{config.job_name_strip}'",
        f"stale_factor = {config.stale_factor}",
        "",
    ]
    for wf in config.workflows:
        tags = ", ".join(f'"{t}"' for t in wf.tags)
        lines += [
            "[[workflows]]",
            f'path = "{wf.path}"',
            f"tags = [{tags}]",
            f'accelerator = "{wf.accelerator}"',
            f'lineage = "{wf.lineage}"',
            "",
        ]
    for ev in config.events:
        lines += [
            "[[events]]",
            f'date = "{ev.date:%Y-%m-%dT%H:%M:%SZ}"',
            f"pr = {ev.pr}" if ev.pr else "# no PR",
            f'kind = "{ev.kind}"',
            f'title = "{ev.title}"',
            "",
        ]
    lines.append(f"# {len(config.invalid_windows)} known invalid-workflow windows")
    return "\n".join(lines)
