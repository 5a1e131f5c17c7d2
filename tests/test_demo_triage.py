"""The demo shows triage at work: a maintainer's known issue, the issues a night of
``triage --post`` filed on fakehub, and the nightly summary's triage section naming both."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from ciflake.demo import DEMO_LINK_URL, DEMO_MAINTAINER
from fakehub.history import DEFAULT_END
from reports.summary_render import render_summary
from store.engine import make_engine
from store.models import KnownIssue, TriageLog
from tests.support.summaries import summary_data


def test_the_demo_holds_a_known_issue_and_filed_ones_and_the_summary_names_them(demo_db):
    engine = make_engine(demo_db, read_only=True)
    with engine.connect() as conn:
        links = conn.execute(select(KnownIssue)).all()
        filed = conn.execute(select(TriageLog).where(TriageLog.action == "filed")).all()
    engine.dispose()
    person = [link for link in links if link.source == "person"]
    ours = [link for link in links if link.source == "ciflake"]
    assert [(link.url, link.set_by) for link in person] == [(DEMO_LINK_URL, DEMO_MAINTAINER)]
    assert ours and all(link.state == "open" and link.issue_number for link in ours)
    assert sorted(row.issue_number for row in filed) == sorted(link.issue_number for link in ours)
    body = render_summary(summary_data(demo_db, DEFAULT_END - timedelta(days=2), DEFAULT_END))
    section = body[body.index("### Triage") :].split("\n### ")[0]
    assert DEMO_LINK_URL in section
    for link in ours:
        assert f"/issues/{link.issue_number})" in section and link.signature in section
    assert f": filed {len(ours)}\n" in section
