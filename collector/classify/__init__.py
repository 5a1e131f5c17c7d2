"""Failure classifier: ordered rules as data (rules.toml), streamed over raw logs by Hyperscan.

Public API (used by the collector and the CLI):

- ``classify_log(source, *, job_name=None, failed_steps=(), green_log=None, rules=None)``
  -> ``Classification``. ``source`` is log text (``bytes`` or ``str``), a path (``os.PathLike``,
  e.g. ``pathlib.Path``; a plain ``str`` is text, not a path) or a binary stream. The log is read
  once in chunks, so a 1 GB log stays under 200 MB of memory.
- ``classify_job(*, job_name=None, failed_steps=(), annotations=(), no_jobs=False, log=None,
  green_log=None, rules=None)`` -> ``Classification``, for the cases without a log (a run that
  failed with no jobs, a failed ``setup`` job, an expired log) and to join GitHub's annotations
  ("exceeded the maximum execution time", "lost communication with the server") with the log.
- ``Classification``: frozen dataclass ``category, rule, signature, line_number, line, context,
  env, rules_version``. ``category`` is one of ``store.vocabulary.CATEGORIES``.
- ``load_rules(path=None) -> RuleSet`` (default: the packaged rules.toml) and ``RULES_VERSION``,
  the packaged rules' version, to record with every failure.
"""

from collector.classify.engine import Classification, classify_job, classify_log
from collector.classify.rules import RULES_VERSION, RuleSet, load_rules

__all__ = [
    "RULES_VERSION",
    "Classification",
    "RuleSet",
    "classify_job",
    "classify_log",
    "load_rules",
]
