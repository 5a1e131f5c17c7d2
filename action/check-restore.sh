#!/usr/bin/env bash
# Stops the night when the restore matched nothing although GitHub lists `ciflake-db-` entries
# on this ref or on the default branch (a restore that failed, not a first night): a night that
# went on would save a near-empty database as the newest entry, the next night would restore
# that one and the clean-up would then delete the good, older entry. Stopped, the night
# collects, saves and deletes nothing, and the next night retries the restore. With no entry
# listed anywhere (the first night, or every entry evicted after 7 days unused) the night goes
# on and keep-one-cache.sh warns that the backfill starts again.
# Environment: RESTORED (the key the restore matched; empty for none), REF (github.ref),
# DEFAULT_BRANCH (empty on a scheduled run, which runs on the default branch, i.e. REF),
# GITHUB_REPOSITORY, GH_TOKEN; GITHUB_STEP_SUMMARY when set.
set -euo pipefail
: "${REF:?}" "${GITHUB_REPOSITORY:?}"
if [ -n "${RESTORED:-}" ]; then exit 0; fi

refs=("$REF")
if [ -n "${DEFAULT_BRANCH:-}" ] && [ "refs/heads/$DEFAULT_BRANCH" != "$REF" ]; then
  refs+=("refs/heads/$DEFAULT_BRANCH")
fi
found=0
for ref in "${refs[@]}"; do
  listed=$(gh cache list --repo "$GITHUB_REPOSITORY" --ref "$ref" --key ciflake-db- --limit 100 \
    --json key --jq '.[].key')
  found=$((found + $(grep -c . <<<"$listed" || true)))
done
if [ "$found" -gt 0 ]; then
  message="the database restore failed although $found ciflake-db- cache entries exist on \
${refs[*]}. Nothing was collected, saved or deleted, so the next night retries the restore. \
To recover now, re-run this job; if the restore keeps failing, delete the unreadable entry \
(gh cache list --key ciflake-db-, then gh cache delete ID) and run it again."
  echo "::error title=ciflake database::$message"
  echo "**ciflake database: $message**" >>"${GITHUB_STEP_SUMMARY:-/dev/null}"
  exit 1
fi
