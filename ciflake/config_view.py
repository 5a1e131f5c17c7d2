"""``ciflake config show``: the effective configuration as TOML-like text, token hidden."""

from __future__ import annotations

from store.engine import safe_url
from store.project import Project
from store.settings import Config


def render_config(config: Config) -> str:
    lines = [
        f"# effective configuration (source: {config.source})",
        "[github]",
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
        f"reserve = {config.collect_reserve}",
        "",
        "[summary]",
        f'nightly_at = "{config.summary_nightly_at}"',
        "",
        "[dashboard]",
        f'host = "{config.dashboard_host}"',
        f"port = {config.dashboard_port}",
        f"recent_days = {config.dashboard_recent_days}",
        "",
    ]
    for project in config.projects:
        lines += _project_lines(project)
    return "\n".join(lines)


def _project_lines(project: Project) -> list[str]:
    """One [[repositories]] entry with every setting spelled out, as the commands use it."""
    analysis = project.analysis
    lines = [
        "[[repositories]]",
        f'repo = "{project.repo}"',
        f'default_branch = "{project.default_branch}"',
        f"job_name_strip = '{project.job_name_strip}'",
        f"window_days = {analysis.window_days}",
        f"first_runs = {analysis.first_runs}",
        f"min_runs = {analysis.min_runs}",
        f"stale_factor = {analysis.stale_factor}",
        f"summary_pr = {project.summary_pr}" if project.summary_pr else "# no summary_pr",
        _triage_line(project),
        "",
    ]
    for wf in project.workflows:
        tags = ", ".join(f'"{t}"' for t in wf.tags)
        lines += [
            "[[repositories.workflows]]",
            f'path = "{wf.path}"',
            f"tags = [{tags}]",
            f'accelerator = "{wf.accelerator}"',
            f'lineage = "{wf.lineage}"',
            "",
        ]
    for ev in project.events:
        lines += [
            "[[repositories.events]]",
            f'date = "{ev.date:%Y-%m-%dT%H:%M:%SZ}"',
            f"pr = {ev.pr}" if ev.pr else "# no PR",
            f'kind = "{ev.kind}"',
            f'title = "{ev.title}"',
            "",
        ]
    lines.append(f"# {len(project.invalid_windows)} known invalid-workflow windows")
    lines.append("")
    return lines


def _triage_line(project: Project) -> str:
    """The repository's [triage] settings as the inline table a [[repositories]] entry takes."""
    triage = project.triage
    login = f', login = "{triage.login}"' if triage.login else ""
    return (
        f"triage = {{ min_failures = {triage.min_failures}, min_runs = {triage.min_runs}, "
        f"window_days = {triage.window_days}, quiet_days = {triage.quiet_days}, "
        f"max_new = {triage.max_new}{login} }}"
    )
