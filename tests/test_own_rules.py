"""Maintainers' own [[rules]] in ciflake.toml: they decide before the built-in rules, per
repository, in `classify`, the collector and `reclassify`; a broken one is one line at load."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from ciflake.cli import cli
from collector.classify import RULES_VERSION, classify_log
from collector.classify.rules import with_own_rules
from collector.logs import save_run_failure
from store.engine import make_engine
from store.models import Failure, LogicalJob
from store.settings import load_config

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "tests" / "fixtures" / "own-rules" / "npu-health-check.log"
DOCS = ROOT / "docs" / "classifier.md"
SECOND = "verl-project/verl-recipe"
SECOND_ENTRY = (
    f'[[repositories]]\nrepo = "{SECOND}"\n'
    '[[repositories.workflows]]\npath = ".github/workflows/e2e.yml"\nlineage = "e2e"\n'
)


def _docs_example() -> str:
    """The [[rules]] example of docs/classifier.md, as a maintainer would copy it."""
    fences = re.findall(r"^```toml\n(.*?)^```", DOCS.read_text(encoding="utf-8"), re.M | re.S)
    (example,) = [fence for fence in fences if fence.startswith("[[rules]]")]
    return example


def _config(tmp_path: Path, text: str) -> Path:
    file = tmp_path / "ciflake.toml"
    file.write_text(text, encoding="utf-8")
    return file


def test_the_docs_example_decides_what_the_built_in_rules_leave_unknown(tmp_path, runner):
    assert classify_log(LOG).category == "unknown"  # the built-in rules know no such line
    config = _config(tmp_path, _docs_example())
    result = runner.invoke(cli, ["--config", str(config), "classify", "--explain", str(LOG)])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"{LOG}: npu_env (rule 'npu health check', line 8)"
    assert lines[1] == f"  your own rule, from {config}: [[rules]] #1"
    assert "> NPU health check failed on node ascend-ci-07" in lines[3]


def test_a_repositorys_rule_applies_to_that_repository_only(tmp_path, runner):
    rule = 'name = "npu health check"\ncategory = "npu_env"\npatterns = ["NPU health check"]\n'
    config = _config(
        tmp_path,
        f'[[repositories]]\nrepo = "verl-project/verl"\n{SECOND_ENTRY}'
        f"[[repositories.rules]]\n{rule}",
    )
    loaded = load_config(config, env={})
    assert [t.table["name"] for t in loaded.project(SECOND).rules] == ["npu health check"]
    assert loaded.project("verl-project/verl").rules == ()
    for repo, category in ((SECOND, "npu_env"), ("verl-project/verl", "unknown")):
        args = ["--config", str(config), "classify", "--json", "--repo", repo, str(LOG)]
        result = runner.invoke(cli, args)
        assert result.exit_code == 0, result.output
        assert f'"category": "{category}"' in result.output, repo


def test_a_repositorys_rules_come_before_the_top_level_ones(tmp_path):
    config = _config(
        tmp_path,
        '[[rules]]\nname = "health, any repository"\ncategory = "infra"\n'
        'patterns = ["health check failed"]\n'
        f'{SECOND_ENTRY}[[repositories.rules]]\nname = "npu health"\ncategory = "npu_env"\n'
        'patterns = ["NPU health check failed"]\n',
    )
    loaded = load_config(config, env={})
    ours = with_own_rules(loaded.project(SECOND).rules)
    assert classify_log(LOG, rules=ours).rule == "npu health"
    anyone = with_own_rules(loaded.project_for("someone/else").rules)  # in the DB, not the config
    assert classify_log(LOG, rules=anyone).rule == "health, any repository"


def test_own_rules_are_compiled_once_and_their_version_shows_them(tmp_path):
    rules = load_config(_config(tmp_path, _docs_example()), env={}).project().rules
    first = with_own_rules(rules)
    assert with_own_rules(rules) is first  # once per process, not per log
    assert re.fullmatch(re.escape(RULES_VERSION) + r"\+[0-9a-f]{8}", first.version)
    changed = _config(tmp_path, _docs_example().replace("npu_env", "infra"))
    assert with_own_rules(load_config(changed, env={}).project().rules).version != first.version
    assert with_own_rules(()).version == RULES_VERSION
    assert classify_log(LOG, rules=first).rules_version == first.version


def test_the_collector_classifies_a_repositorys_logs_with_its_rules(tmp_path):
    from collector.logs import LogResult
    from collector.sync import Collector

    config = load_config(_config(tmp_path, _docs_example()), env={})
    client = SimpleNamespace(stats=SimpleNamespace(requests=0, not_modified=0))
    collector = Collector(config, config.project(), None, client, None, None)  # type: ignore[arg-type]
    collector.fetcher.close()
    assert collector.fetcher.rules is with_own_rules(config.project().rules)
    job = {"id": 1, "run_id": 1, "name": "e2e_ascend", "steps": []}
    result = LogResult(job, "ok", content=LOG.read_bytes(), rules=collector.fetcher.rules)
    assert (result.classification.category, result.classification.rule) == (
        "npu_env",
        "npu health check",
    )


BROKEN = {
    "unknown key": ('pattern = ["x"]', "key 'pattern': not a rule's key"),
    "no name": ("", "key 'name': missing"),
    "no category": (None, "key 'category': missing"),
    "unknown category": ('category = "npu"', "key 'category': unknown category 'npu'"),
    "bad regex": ("patterns = ['failed on (node']", "key 'patterns': bad regex"),
    "regex Hyperscan refuses": ("patterns = ['failed(?= on)']", "key 'patterns': the log scanner"),
    "not a list": ("patterns = 'NPU health'", "key 'patterns': must be a list of strings"),
    "bad exclude": ("exclude = ['[']", "key 'exclude': bad regex"),
    "bad role": ('role = "boss"', "key 'role': must be one of"),
    "a built-in name": ('name = "CUDA out of memory"', "key 'name': 'CUDA out of memory' is"),
    "qualifies nothing known": (
        'role = "qualifier"\nqualifies = ["nope"]',
        "key 'qualifies': 'npu health' qualifies unknown rules ['nope']",
    ),
}


def _broken(change: str | None) -> str:
    """A rule with one mistake: `change` replaces its line of the same key, or is added;
    None drops its category, "" its name."""
    lines = {"name": 'name = "npu health"', "category": 'category = "npu_env"'}
    lines["patterns"] = "patterns = ['NPU health check failed']"
    if change is None:
        del lines["category"]
    elif change == "":
        del lines["name"]
    else:
        for line in change.splitlines():
            lines[line.split(" =")[0]] = line
    return "\n".join(lines.values()) + "\n"


@pytest.mark.parametrize("kind", list(BROKEN))
def test_a_broken_rule_stops_with_one_line_naming_file_rule_and_key(tmp_path, runner, kind):
    change, expected = BROKEN[kind]
    rule = _broken(change)
    config = _config(tmp_path, f"[[rules]]\n{rule}")
    named = "".join(f", rule {name}" for name in re.findall(r'^name = (".*")$', rule, re.M))
    for command in (["classify", str(LOG)], ["config", "show"]):
        result = runner.invoke(cli, ["--config", str(config), *command])
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1, result.output
        assert lines[0].startswith(f"ciflake: error: {config}: [[rules]] #1{named}: {expected}")
        assert "Traceback" not in result.output


def test_a_broken_repository_rule_names_its_repository(tmp_path, runner):
    config = _config(tmp_path, f"{SECOND_ENTRY}[[repositories.rules]]\n{_broken('category = 1')}")
    result = runner.invoke(cli, ["--config", str(config), "reclassify"])
    assert result.exit_code == 2
    assert result.output == (
        f'ciflake: error: {config}: [[repositories.rules]] #1 of {SECOND}, rule "npu health": '
        "key 'category': must be str, got 1\n"
    )


def test_rules_must_be_an_array_of_tables(tmp_path, runner):
    config = _config(tmp_path, 'rules = "npu"\n')
    result = runner.invoke(cli, ["--config", str(config), "config", "show"])
    assert result.exit_code == 2
    assert result.output == (
        f"ciflake: error: {config}: 'rules' must be an array of tables [[rules]]\n"
    )


def test_reclassify_applies_own_rules_to_stored_failures(thin_db, tmp_path, runner):
    """A rule of the repository's own that knows the stored failure's line: reclassify gives the
    failure its category, rule and version, and the logical job follows."""
    db_url = thin_db("one run")
    engine = make_engine(db_url)
    with Session(engine) as session:
        failure = session.scalars(
            select(Failure).where(Failure.job_id != 0, Failure.line.is_not(None))
        ).first()
        assert failure is not None
        key = (failure.run_id, failure.job_id)
        word = max(re.findall(r"[A-Za-z]{4,}", failure.line or ""), key=len)
        category = "npu_env" if failure.category != "npu_env" else "infra"
    config = _config(
        tmp_path,
        '[[repositories]]\nrepo = "verl-project/verl"\n[[repositories.rules]]\n'
        f'name = "ours"\ncategory = "{category}"\npatterns = ["{word}"]\n',
    )
    result = runner.invoke(cli, ["--config", str(config), "--db", db_url, "reclassify"])
    assert result.exit_code == 0, result.output
    assert re.search(rf"with rules {re.escape(RULES_VERSION)}\+[0-9a-f]{{8}}", result.output)
    with Session(engine) as session:
        stored = session.scalars(
            select(Failure).where(Failure.run_id == key[0], Failure.job_id == key[1])
        ).one()
        assert (stored.category, stored.rule) == (category, "ours")
        assert stored.classifier_version.startswith(f"{RULES_VERSION}+")
        logical = session.scalars(select(LogicalJob).where(LogicalJob.run_id == key[0])).all()
        assert category in {job.category for job in logical}
    engine.dispose()


def test_reclassify_applies_a_no_jobs_rule_to_runs_that_failed_with_no_jobs(
    thin_db, tmp_path, runner
):
    """A run-level failure (job id 0: no jobs, or startup_failure) is classified again too."""
    db_url = thin_db("one run")
    engine = make_engine(db_url)
    with Session(engine) as session, session.begin():
        run_id = session.scalars(select(Failure.run_id)).first()
        save_run_failure(session, {"id": run_id, "run_attempt": 1}, None)  # as a collect did
    config = _config(
        tmp_path,
        '[[repositories]]\nrepo = "verl-project/verl"\n[[repositories.rules]]\n'
        'name = "runner-pool-down"\ncategory = "infra"\nno_jobs = true\n',
    )
    result = runner.invoke(cli, ["--config", str(config), "--db", db_url, "reclassify"])
    assert result.exit_code == 0, result.output
    with Session(engine) as session:
        stored = session.scalars(
            select(Failure).where(Failure.run_id == run_id, Failure.job_id == 0)
        ).one()
        assert (stored.category, stored.rule) == ("infra", "runner-pool-down")
        assert stored.classifier_version.startswith(f"{RULES_VERSION}+")
    engine.dispose()
