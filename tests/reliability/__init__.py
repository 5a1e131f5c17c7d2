"""Reliability and security suites (issue 9): faults, crashes, bad inputs, leaks, concurrency.

`make test` runs them small; `make reliability` (`python -m tests.reliability`) runs them full
(``CIFLAKE_RELIABILITY=full``) and prints what they tried and what went wrong, from the counts
each test records with ``tests.reliability.harness.record``.
"""
