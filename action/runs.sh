#!/usr/bin/env bash
# How many workflow runs the nightly's SQLite database holds: 0 when there is no file yet (the
# first night, or a restore that found nothing). Usage: runs.sh DB_FILE.
set -euo pipefail
db=${1:?usage: runs.sh DB_FILE}
if [ -f "$db" ]; then ciflake --db "sqlite:///$db" db stats --runs; else echo 0; fi
