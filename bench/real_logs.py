"""The classifier on real failure logs: exact-label accuracy, per-category recall and precision,
a confusion matrix and every miss (``python -m bench.real_logs [FILE.jsonl]``).

FILE is JSONL, one labelled excerpt a line (``id``, ``label``,
``secondary_label``, ``text``...); its label ``other`` is ciflake's ``unknown``. The default is
the first development set beside the repository; ``make bench`` scores both sets there, and
says so for a set that is absent and scores nothing.
The excerpts are third-party text: misses are listed by id, never quoted into RESULTS.md.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from collector.classify import Classification, classify_log
from store.vocabulary import CATEGORIES

DEV_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "real-logs"
DEV_SET = DEV_DIR / "dev.jsonl"
DEV_SETS = (DEV_SET, DEV_DIR / "dev2.jsonl")
COMMAND = "python -m bench.real_logs"
# #36: on each set, 97% exact, no category's recall under 90%, and a named category (not
# unknown) right at least 95% of the times it is named.
TARGET_EXACT = 0.97
TARGET_RECALL = 0.90
TARGET_PRECISION = 0.95


@dataclass(frozen=True)
class Case:
    id: str
    label: str
    secondary: str | None
    got: str
    rule: str
    line: str | None
    reason: str  # one line: why the classifier did not give the label (from its explanation)

    @property
    def exact(self) -> bool:
        return self.got == self.label

    @property
    def acceptable(self) -> bool:
        return self.exact or self.got == self.secondary


def _category(label: str | None) -> str | None:
    return "unknown" if label == "other" else label


def score(path: Path) -> list[Case]:
    """Classify every excerpt of a JSONL set as ``ciflake classify`` does."""
    cases = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        if not raw.strip():
            continue
        row = json.loads(raw)
        result = classify_log(row["text"])
        label = _category(row["label"]) or "unknown"
        cases.append(
            Case(
                id=row["id"],
                label=label,
                secondary=_category(row.get("secondary_label")),
                got=result.category,
                rule=result.rule,
                line=result.line,
                reason=_reason(result, label),
            )
        )
    return cases


def _reason(result: Classification, label: str) -> str:
    """Why `result` is not `label`, in the words of the decision's own explanation."""
    winner, *others = result.explanation
    wanted = next((step for step in others if step.category == label), None)
    if wanted is not None:
        return f"{wanted.rule!r} matched but {wanted.verdict}"
    return f"no rule of {label} matched; {winner.rule!r} {winner.verdict}"


def recall_precision(cases: list[Case]) -> dict[str, tuple[float | None, float | None, int]]:
    """category -> (recall, precision, cases labelled with it); None where undefined."""
    labelled = Counter(c.label for c in cases)
    picked = Counter(c.got for c in cases)
    right = Counter(c.label for c in cases if c.exact)
    return {
        category: (
            right[category] / labelled[category] if labelled[category] else None,
            right[category] / picked[category] if picked[category] else None,
            labelled[category],
        )
        for category in CATEGORIES
        if labelled[category] or picked[category]
    }


def report(cases: list[Case]) -> str:
    """Everything a maintainer reads to improve the rules: totals, per category, the confusion
    matrix (rows: label, columns: ciflake's category) and every miss with its picked line."""
    exact = sum(c.exact for c in cases)
    acceptable = sum(c.acceptable for c in cases)
    n = len(cases)
    lines = [f"exact {exact}/{n} = {exact / n:.1%}; acceptable {acceptable}/{n}", ""]
    lines.append(f"{'category':<20} {'recall':>7} {'precision':>9} {'n':>4}")
    for category, (rec, prec, count) in recall_precision(cases).items():
        r = "-" if rec is None else f"{rec:.0%}"
        p = "-" if prec is None else f"{prec:.0%}"
        lines.append(f"{category:<20} {r:>7} {p:>9} {count:>4}")
    used = [c for c in CATEGORIES if any(x.label == c or x.got == c for x in cases)]
    matrix = Counter((c.label, c.got) for c in cases)
    lines += ["", "label \\ got".ljust(20) + "".join(f"{c[:7]:>8}" for c in used)]
    for label in used:
        lines.append(f"{label:<20}" + "".join(f"{matrix[(label, got)]:>8}" for got in used))
    lines += ["", "misses:"]
    for c in cases:
        if not c.exact:
            lines.append(f"- {c.id}: {c.label} -> {c.got} ({c.rule}): {c.line or '(no line)'}")
            lines.append(f"  why: {c.reason}")
    return "\n".join(lines)


def measure() -> list[dict]:
    return [row for path in DEV_SETS for row in measure_set(path)]


def measure_set(path: Path) -> list[dict]:
    command = f"{COMMAND} {path.name}" if path != DEV_SET else COMMAND
    if not path.exists():
        return [
            {
                "figure": f"Real failure logs ({path.name}), exact category",
                "value": "not measured",
                "target": f">= {TARGET_EXACT:.0%}",
                "met": None,
                "command": command,
                "note": f"{path} is absent: the development sets live beside the repository",
            }
        ]
    cases = score(path)
    exact = sum(c.exact for c in cases) / len(cases)
    table = recall_precision(cases)
    recalls = {k: v[0] for k, v in table.items() if v[0] is not None}
    worst = min(recalls, key=recalls.__getitem__)
    named = {k: v[1] for k, v in table.items() if v[1] is not None and k != "unknown"}
    least = min(named, key=named.__getitem__)
    # by id and rule only: a reason may quote the excerpt (a path, a message), which stays out
    # of the repository; `python -m bench.real_logs FILE` prints the reasons
    misses = "; ".join(
        f"{c.id} ({c.label} -> {c.got}, rule {c.rule!r})" for c in cases if not c.exact
    )
    return [
        {
            "figure": f"Real failure logs ({path.name}), exact category",
            "value": f"{sum(c.exact for c in cases)}/{len(cases)} = {exact:.1%}",
            "target": f">= {TARGET_EXACT:.0%}",
            "met": exact >= TARGET_EXACT,
            "command": command,
            "note": f"misses: {misses}" if misses else "",
        },
        {
            "figure": f"Real failure logs ({path.name}), lowest category recall",
            "value": f"{worst} {recalls[worst]:.0%}",
            "target": f">= {TARGET_RECALL:.0%}",
            "met": recalls[worst] >= TARGET_RECALL,
            "command": command,
            "note": "",
        },
        {
            "figure": f"Real failure logs ({path.name}), lowest precision of a named category",
            "value": f"{least} {named[least]:.0%}",
            "target": f">= {TARGET_PRECISION:.0%}",
            "met": named[least] >= TARGET_PRECISION,
            "command": command,
            "note": "how often a category other than unknown is right when the classifier names it",
        },
    ]


def main() -> int:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else DEV_SET
    if not path.exists():
        print(f"{path} is absent: nothing to score")
        return 0
    print(report(score(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
