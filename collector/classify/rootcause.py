"""Which rule's line is a failure's root cause: the labelling procedure, as code.

The procedure a maintainer follows (and the real-log labels follow) first finds the root-cause
line, then lets the first matching rule win:

- a wrapper takes the category of the error it carries (`Rule.carries`: pytest's "FAILED t.py::x
  - KeyError: 'k'" is the KeyError, not a test assertion); when no rule knows that error, the
  wrapper stands for it only if it is the wrapper's own (`Rule.stands_for`: pytest's "assert
  ..."), else it names no cause and the error decides as an unknown one;
- a consequence yields to a cause seen earlier in the log (`role = "consequence"`: a collective
  timeout on a rank that waited for a rank that crashed, a dead actor, a failed child);
- advice is never evidence ("There are some potential root causes: (1) ... OOM killer"), and a
  line a rule matched only in a lower log level (WARNING, INFO, a retry) is weak: weak lines
  decide only when no strong line, not even an unknown error, is there, and then the last of
  them is the cause;
- an error the rule insists on seeing raised somewhere (`Rule.raised_in`: an AssertionError
  raised by a test, not by the trainer's own sanity check) is passed over when its traceback
  says otherwise;
- then rule order is the tie-breaker;
- a qualifier re-reads the winner: a bare SIGKILL (exit 137) is memory by default, unless the
  log itself shows memory was not exhausted (Docker's `"OOMKilled": false`), which makes it the
  host's doing (the procedure's step 1).

`decide` returns the winner and every candidate it passed over, with the reason, which
`ciflake classify --explain` prints.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from collector.classify.log_stream import Hit
from collector.classify.rules import Rule, RuleSet

# A traceback frame: Python's own form (its quotes JSON-escaped or not; a Windows path keeps
# its backslashes, any but one before the closing quote), and pytest's
# ("megatron/core/x.py:812: in forward").
_FRAME = re.compile(r'File \\?"((?:[^"\\]|\\(?!"))+)\\?", line \d+|^(\S+\.py):\d+: in ')
STRONG, WEAK, LAST_RESORT = "strong", "weak", "last resort"
NOTHING = "won: nothing to go on"


@dataclass(frozen=True)
class Step:
    """One candidate the decision looked at: a rule, its line, and what became of it."""

    rule: str
    category: str
    line_number: int | None
    line: str | None
    verdict: str


@dataclass(frozen=True)
class Decision:
    rule: Rule
    hit: Hit | None
    steps: tuple[Step, ...]  # the winner's step first, then the others in rule order


@dataclass(frozen=True)
class Evidence:
    """Per rule index: its last strong and last weak line, and the line of its first strong
    one; `catch_all` is the catch-all's chosen line."""

    strong: Sequence[Hit | None]
    weak: Sequence[Hit | None]
    first: dict[int, Hit]
    catch_all: Hit | None


def _step(rule: Rule, hit: Hit | None, verdict: str) -> Step:
    line = hit.line if hit else None
    return Step(rule.name, rule.category, hit.line_number if hit else None, line, verdict)


def _carried_text(rule: Rule, line: str) -> str:
    found = rule.carries.search(line) if rule.carries else None
    return found.group(1).strip() if found else ""


def _raised_elsewhere(rule: Rule, hit: Hit) -> str | None:
    """The traceback frame that raised `hit`'s error, when it is not where `rule` wants it."""
    if rule.raised_in is None:
        return None
    frames = [
        (found[1] or found[2]).replace("\\", "/")  # one separator for raised_in's patterns
        for line in hit.context
        if (found := _FRAME.search(line))
    ]
    if frames and not rule.raised_in.search(frames[-1]):
        return frames[-1]
    return None


class _Decider:
    def __init__(self, ruleset: RuleSet, evidence: Evidence, holds: Callable[[Rule], bool]):
        self.ruleset, self.evidence, self.holds = ruleset, evidence, holds
        self.rules = ruleset.rules[:-1]
        self.passed: dict[int, Step] = {}  # rule index -> why it did not win

    def decide(self) -> Decision:
        won = self._tier(STRONG, self.evidence.strong)
        if won is None and self.evidence.catch_all is not None:
            verdict = "won: no rule holds, so the last error-looking line"
            won = len(self.rules), self.evidence.catch_all, verdict
        if won is None:
            won = self._tier(WEAK, self.evidence.weak)
        if won is None:
            won = self._tier(LAST_RESORT, self.evidence.strong)
        return self._decision(*self._qualified(*(won or (len(self.rules), None, NOTHING))))

    def _qualified(self, winner: int, hit: Hit | None, verdict: str):
        """The winner, or the first qualifier of it whose evidence is in the log (any level:
        a watcher's reading is a fact, whatever the level it prints it at)."""
        won = self.ruleset.rules[winner]
        for index, rule in enumerate(self.rules):
            line = self.evidence.strong[index] or self.evidence.weak[index]
            if won.name not in rule.qualifies or line is None or not self.holds(rule):
                continue
            self.passed[winner] = _step(won, hit, f"qualified by {rule.name!r}")
            return index, line, f"won: qualifies {won.name!r}, which alone would have decided"
        return winner, hit, verdict

    def _tier(self, tier: str, hits: Sequence[Hit | None]):
        """The first rule in order that wins on `hits`; weak lines go by position instead, the
        last one first: with no error in the log, the last warning is the nearest to the end."""
        # last-resort rules (how a job ended: "exit code 124") decide only after every other
        # rule, the catch-all and the weak lines had nothing
        order = [
            (index, rule)
            for index, rule in enumerate(self.rules)
            if (rule.role == "last_resort") == (tier == LAST_RESORT) and rule.role != "qualifier"
        ]
        if tier == WEAK:
            order.sort(key=lambda item: -(getattr(hits[item[0]], "line_number", None) or 0))
        for index, rule in order:
            hit = hits[index]
            if index in self.passed or (hit is None and (rule.patterns or tier == WEAK)):
                continue
            won = self._judge(index, rule, hit, tier)
            if won is not None:
                return won
        return None

    def _judge(self, index: int, rule: Rule, hit: Hit | None, tier: str):
        """(winner index, hit, verdict) if `rule` wins here, else None (and why, in passed)."""
        if not self.holds(rule):
            if hit is not None:
                self.passed[index] = _step(rule, hit, "its job conditions do not hold")
            return None
        won = "won: first rule in order whose evidence holds"
        if tier == LAST_RESORT:
            won = "won: how the job ended, as nothing else in the log says why"
        if tier == WEAK:
            won = "won: the last weak line (only in WARNING/INFO text; nothing else decides)"
        if hit is not None and rule.carries is not None:
            carried = self._carried(index, rule, hit)
            if carried is not None:
                return carried
            if index in self.passed:
                return None
        if hit is not None and (frame := _raised_elsewhere(rule, hit)):
            self.passed[index] = _step(rule, hit, f"raised in {frame}, not where the rule wants")
            return None
        if hit is not None and rule.role == "consequence":
            cause = self._earlier_cause(index, hit)
            if cause is not None:
                target, first = self.ruleset.rules[cause], self.evidence.first[cause]
                verdict = f"a consequence: yields to {target.name!r}, seen earlier"
                self.passed[index] = _step(rule, hit, verdict)
                return cause, first, f"won: the earlier cause that {rule.name!r} followed"
        return index, hit, won

    def _carried(self, index: int, rule: Rule, hit: Hit):
        """The wrapper's verdict from the error it carries, or None if it stands for itself."""
        text = _carried_text(rule, hit.line)
        if not text:
            return None
        target = self._resolve(text, (index,))
        if target is None:
            if rule.stands_for is None or rule.stands_for.search(text):
                return None  # nothing a rule knows, its own: "FAILED t.py::x - assert 127 == 128"
            # an error no rule knows and not the wrapper's own: the wrapper names no cause, and
            # the unknown error decides as unknown (the catch-all, unless a rule below holds)
            verdict = f"a wrapper: carries {text!r}, an error no rule knows"
            self.passed[index] = _step(rule, hit, verdict)
            return None
        target_rule = self.ruleset.rules[target]
        if target == index or target in self.passed or not self.holds(target_rule):
            self.passed[index] = _step(rule, hit, f"a wrapper: carries {text!r}, no rule's cause")
            return None
        self.passed[index] = _step(rule, hit, f"a wrapper: carries {target_rule.name!r}")
        return target, hit, f"won: carried by {rule.name!r}"

    def _resolve(self, text: str, chain: tuple[int, ...]) -> int | None:
        """The rule that `text` comes to, through wrappers inside wrappers ("FAILED ... -
        RayTaskError(OutOfMemoryError)"); None if no rule but the catch-all knows it."""
        target = self.ruleset.rule_for_text(text)
        if target is None or target == len(self.rules):
            return None
        inner = _carried_text(self.ruleset.rules[target], text) if target not in chain else ""
        deeper = self._resolve(inner, (*chain, target)) if inner else None
        return target if deeper is None else deeper

    def _earlier_cause(self, index: int, hit: Hit) -> int | None:
        """The rule of the earliest concrete cause logged before the consequence first showed
        (a watchdog timeout is followed by its own abort lines, which are not its cause)."""
        first = self.evidence.first
        since = first.get(index, hit).line_number
        if since is None:
            return None
        causes = [
            (cause_hit.line_number, cause)
            for cause, cause_hit in first.items()
            if cause != index
            and cause < len(self.rules)
            and cause not in self.passed
            and self.ruleset.rules[cause].role == "cause"
            and (cause_hit.line_number or since) < since
            and self.holds(self.ruleset.rules[cause])
            and not _raised_elsewhere(self.ruleset.rules[cause], cause_hit)
        ]
        return min(causes)[1] if causes else None

    def _decision(self, winner: int, hit: Hit | None, verdict: str) -> Decision:
        rule = self.ruleset.rules[winner]
        steps = [_step(rule, hit, verdict)]
        for index, other in enumerate(self.rules):
            if index == winner:
                continue
            strong, weak = self.evidence.strong[index], self.evidence.weak[index]
            if index in self.passed:
                steps.append(self.passed[index])
            elif other.role == "qualifier" and (strong or weak):
                names = ", ".join(repr(name) for name in other.qualifies)
                steps.append(_step(other, strong or weak, f"qualifies only {names}"))
            elif strong is not None:
                steps.append(_step(other, strong, f"lower in rule order than {rule.name!r}"))
            elif weak is not None:
                steps.append(_step(other, weak, "weak: seen only in WARNING/INFO text"))
        return Decision(rule, hit, tuple(steps))


def decide(ruleset: RuleSet, evidence: Evidence, holds: Callable[[Rule], bool]) -> Decision:
    """The root cause among `evidence`; `holds(rule)` says whether its job conditions hold."""
    return _Decider(ruleset, evidence, holds).decide()
