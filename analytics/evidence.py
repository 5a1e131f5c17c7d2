"""How much of a category mix is known: which evidence decided each failure, and why the rest
is `unknown` (docs/vocabulary.md "evidence").

GitHub deletes job logs after 90 days but keeps annotations, steps and jobs for 400, so most
of a migration's history is classified from what survives, or not at all. Each failure's
**basis** is one of ``BASES``: the evidence that decided its category, or for an ``unknown``
one why nothing did. The dashboard, the summary and the export all describe a mix with
``describe``.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

LOG_EXPIRED = "unknown: log expired"
NO_RULE = "unknown: log read, no rule matched"
NO_LOG = "unknown: no log"
CONFIG_BASIS = "config"  # the run fell in a configured [[invalid_windows]] span
MAINTAINER = "maintainer"  # a maintainer's correction of the signature (ciflake triage correct)
BASES: tuple[str, ...] = (
    MAINTAINER,
    "log",
    "annotations",
    "job",
    CONFIG_BASIS,
    LOG_EXPIRED,
    NO_RULE,
    NO_LOG,
)
KNOWN = (MAINTAINER, "log", "annotations", "job", CONFIG_BASIS)
PHRASES = {
    MAINTAINER: "from a maintainer's correction",
    "log": "from the log",
    "annotations": "from annotations",
    "job": "from job facts",
    CONFIG_BASIS: "from the config's invalid windows",
    LOG_EXPIRED: "logs expired",
    NO_RULE: "log read, no rule matched",
    NO_LOG: "no log",
}


def failure_basis(failures: pd.DataFrame) -> pd.Series:
    """Each failure's basis, from ``category``, ``evidence`` (store.vocabulary.EVIDENCE) and
    ``log_status`` (of the job's log: ok, expired, missing, error; empty for a run without
    jobs). A known category keeps the evidence that decided it; an ``unknown`` one says why,
    unless a maintainer decided it is unknown."""
    unknown = failures["category"].eq("unknown") | failures["evidence"].eq("none")
    unknown &= failures["evidence"].ne(MAINTAINER)
    status = failures["log_status"]
    why = pd.Series(NO_LOG, index=failures.index, dtype="object")
    why = why.mask(status.eq("expired"), LOG_EXPIRED).mask(status.eq("ok"), NO_RULE)
    return failures["evidence"].astype("object").where(~unknown, why)


def shares(bases: pd.Series) -> pd.DataFrame:
    """basis, failures, share (of all), in the order of ``BASES``; empty bases are left out."""
    return counted_shares(bases.value_counts())


def counted_shares(failures: pd.Series) -> pd.DataFrame:
    """``shares`` of the failures counted per basis (the index, repeated or not)."""
    counts = failures.groupby(level=0).sum().reindex(list(BASES)).dropna().astype(int)
    total = int(counts.sum())
    return pd.DataFrame(
        {
            "basis": counts.index,
            "failures": counts.to_numpy(),
            "share": counts.to_numpy() / total if total else [],
        }
    )


def describe(bases: pd.Series) -> str:
    """One sentence on how much of a category mix is known, e.g. "category from the log 12%,
    from annotations 35%, from job facts 10%, unknown 43% (logs expired 40%, log read, no
    rule matched 3%); n=739 failures". Every basis present is named; none are invented."""
    return described(shares(bases.dropna()))


def described(table: pd.DataFrame) -> str:
    """``describe`` of the ``shares`` table."""
    return described_counts(dict(zip(table["basis"], table["failures"], strict=True)))


def described_counts(failures: Mapping[str, int]) -> str:
    """``describe`` of the failures counted per basis (the bases not in ``BASES`` left out), in
    plain Python: a table of many mixes describes each without a frame of its own."""
    counts = {basis: int(failures[basis]) for basis in BASES if basis in failures}
    n = sum(counts.values())
    if n == 0:
        return "no failures"
    share = {basis: count / n for basis, count in counts.items()}
    known = [f"{PHRASES[b]} {share[b]:.0%}" for b in KNOWN if b in share]
    unknown = [b for b in BASES if b not in KNOWN and b in share]
    parts = ", ".join(known)
    if unknown:
        total = sum(share[b] for b in unknown)
        detail = ", ".join(f"{PHRASES[b]} {share[b]:.0%}" for b in unknown)
        parts += (", " if parts else "") + f"unknown {total:.0%} ({detail})"
    noun = "failure" if n == 1 else "failures"
    return f"category {parts}; n={n} {noun}"


def corrected(note: str) -> str:
    """How a maintainer's correction reads wherever one failure's category is shown."""
    return f"a maintainer's correction: {note}"


def known_share(bases: pd.Series) -> float:
    """The share of ``bases`` whose category is known (basis in ``KNOWN``); NaN when empty."""
    present = bases.dropna()
    return float(present.isin(KNOWN).mean()) if len(present) else float("nan")


def unknown_reason(stage: str | None, basis: str) -> str:
    """Why one failure is ``unknown``, e.g. "unknown: failed while installing, log expired"
    (stage: where the job stopped; None or NaN when unknown); "" for a known basis."""
    if basis in KNOWN:
        return ""
    why = str(basis).removeprefix("unknown: ")
    where = f"failed while {stage}, " if isinstance(stage, str) and stage else ""
    return f"unknown: {where}{why}"
