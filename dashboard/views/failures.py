"""Failures: categories over time with how much of them is known, the incidents, the signature
table and a drill-down into one failure's log; each a section (dashboard.sections)."""

import pandas as pd
import streamlit as st

from analytics.evidence import MAINTAINER, PHRASES, corrected, described, unknown_reason
from analytics.newness import NEW_DAYS
from dashboard import charts, figures, sections, tables
from dashboard.context import current_view
from dashboard.filters import period
from dashboard.loaders import failures, shared
from dashboard.shaping import SIGNATURE_SHOWS, chosen_signatures

# The incidents' columns the page lists, the cause first after the span.
INCIDENT_LIST = [
    "started_at",
    "ended_at",
    "label",
    "category",
    "kind",
    "signature",
    "runner",
    "jobs",
    "runs",
    "workflows",
]

view = current_view()

st.title("Failures")


def _categories() -> None:
    """The failure categories per period, how much of them is known, the unknown by stage."""
    freq = period("fail_freq")
    counts = shared.table(view.db_url, view.filters, "categories", period=freq)
    events = shared.events(view.db_url, view.filters.repo)
    if len(counts):
        st.plotly_chart(figures.drawn(charts.categories_over_time, counts, events))
    bases = shared.table(view.db_url, view.filters, "failure-bases")
    st.caption(f"How much of this is known: {described(bases)}")
    by_stage = shared.table(view.db_url, view.filters, "unknown-stages")
    st.markdown("**Unknown failures by stage** (where the job stopped, from its failed step)")
    tables.show(
        by_stage, "by-stage", missing="No failure of unknown cause in the range.", hide_index=True
    )


def _incidents() -> None:
    """The bursts of failures with one cause."""
    st.caption(
        "Bursts of failures with one cause across many jobs in a short time (one stuck host, one "
        "Hub outage, one bad image): the same signature, or the same category on one runner or "
        "across several workflows (docs/vocabulary.md). Those with a failure in the range and "
        "scope; jobs, runs and workflows count everything each one hit."
    )
    tables.show(
        shared.table(view.db_url, view.filters, "incidents")[INCIDENT_LIST],
        "incidents",
        missing="No incident in the range and scope: no burst of failures shared a cause.",
        hide_index=True,
        column_config={
            "started_at": st.column_config.DatetimeColumn("start", format="YYYY-MM-DD HH:mm"),
            "ended_at": st.column_config.DatetimeColumn("end", format="YYYY-MM-DD HH:mm"),
            "label": st.column_config.TextColumn("cause", width="large"),
            "kind": st.column_config.TextColumn("found by"),
            "runner": st.column_config.TextColumn("runner (host or label)"),
        },
    )


def _signatures() -> None:
    """The signatures, and one failure of the one chosen with its log."""
    show = st.segmented_control(
        "Show",
        SIGNATURE_SHOWS,
        default="all",
        format_func={
            "all": "all",
            "new": "NEW",
            "known": "known (linked to an issue)",
            "unlinked": "unlinked",
        }.get,
        key="fail_show",
        persist_state="page",
    )
    signatures = chosen_signatures(
        shared.table(view.db_url, view.filters, "signatures"), show or "all"
    )
    st.caption(
        f"NEW: first seen (in the whole history) within the {NEW_DAYS} days that end with the "
        "range (docs/vocabulary.md). Issue: the known issue a maintainer linked "
        "(`ciflake triage link`) or ciflake filed, with its state on GitHub as last read."
    )
    tables.show(
        signatures.rename(columns={"last_seen_in_range": "last_seen"})[
            [
                "signature",
                "new",
                "category",
                "failures",
                "first_seen",
                "last_seen",
                "issue_url",
                "issue_state",
                "line",
                "runner_name",
                "html_url",
            ]
        ],
        "signatures",
        missing=(
            "No failures in the range and scope: no signature, nothing to drill into."
            if (show or "all") == "all"
            else f"No {'NEW' if show == 'new' else show} signature in the range and scope."
        ),
        hide_index=True,
        column_config={
            "new": st.column_config.CheckboxColumn("NEW"),
            "issue_url": st.column_config.LinkColumn("issue"),
            "issue_state": st.column_config.TextColumn("state"),
            "line": st.column_config.TextColumn("example line", width="large"),
            "html_url": st.column_config.LinkColumn("job", display_text="open"),
            "first_seen": st.column_config.DatetimeColumn(format="YYYY-MM-DD"),
            "last_seen": st.column_config.DatetimeColumn(format="YYYY-MM-DD"),
        },
    )

    st.subheader("Drill-down")
    if signatures.empty:
        return
    # Each option's label made once, in one pass over the rows: a lookup per option and column
    # (DataFrame.at) was a tenth of the page's rerun.
    signature_labels = {
        row.signature: f"{row.category} · {row.failures}× · "
        f"{row.line[:90] if isinstance(row.line, str) else 'no line'}"
        for row in signatures[["signature", "category", "failures", "line"]].itertuples()
    }
    signature = st.selectbox(
        "Signature",
        signatures["signature"],
        format_func=signature_labels.__getitem__,
        key="drill_signature",
        persist_state="page",
    )
    occurrences = failures.signature_failures(view.db_url, view.filters, signature)
    occurrence_labels = {
        row.Index: f"{row.created_at:%Y-%m-%d %H:%M} · {row.job_name or 'run without jobs'} · "
        f"{row.runner_name}"
        for row in occurrences[["created_at", "job_name", "runner_name"]].itertuples()
    }
    choice = st.selectbox(
        "Failure",
        occurrences.index,
        format_func=occurrence_labels.__getitem__,
        key="drill_failure",
        persist_state="page",
    )
    failure = occurrences.loc[choice]
    line_number = failure["line_number"]
    matched = f"matched line {line_number:.0f}" if pd.notna(line_number) else "no line"
    st.markdown(f"[Open the job]({failure['html_url']}) · {matched}")
    if failure["evidence"] == MAINTAINER:
        st.info(
            f"Category `{failure['category']}`: {corrected(failure['correction_note'])}. The "
            f"classifier said `{failure['classifier_category']}` "
            f"({PHRASES.get(failure['classifier_evidence'], 'nothing decided it')})."
        )
    has_basis = isinstance(failure["basis"], str)
    reason = unknown_reason(failure["stage"], failure["basis"]) if has_basis else ""
    if reason:
        st.warning(reason)
    excerpt = failures.log_excerpt(view.db_url, int(failure["job_id"]), failure["line_number"])
    if excerpt is not None:
        first, text = excerpt
        st.caption(f"Archived log from line {first}; {matched}.")
        st.code(text, language=None)
    elif failure["line"] or len(failure["context"]):
        st.caption(f"No archived log ({failure['log_status'] or 'no job'}): the stored context.")
        st.code("\n".join([*failure["context"], failure["line"] or ""]), language=None)
    elif not reason:
        st.info(
            f"No log to show ({failure['log_status'] or 'a run without jobs'}): the category comes "
            f"{PHRASES.get(failure['basis'], 'from what survives of the job')}."
        )


sections.show(
    "failures", {"Categories": _categories, "Incidents": _incidents, "Signatures": _signatures}
)
