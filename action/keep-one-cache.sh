#!/usr/bin/env bash
# Keeps one ciflake database cache entry on this run's ref: deletes the ref's older
# `ciflake-db-` entries, by id, and only when both hold: tonight's restore found an entry, and
# GitHub lists tonight's saved entry on this ref. Otherwise it deletes nothing and says why,
# as a warning annotation and in the run's summary. Another ref's entries (the default
# branch's, which the scheduled nights restore) are never listed, so never deleted.
# Environment: KEEP (tonight's key), RESTORED (the key the restore matched; empty for none),
# REF (github.ref), GITHUB_REPOSITORY, GH_TOKEN; GITHUB_STEP_SUMMARY when set.
set -euo pipefail
: "${KEEP:?}" "${REF:?}" "${GITHUB_REPOSITORY:?}"
summary=${GITHUB_STEP_SUMMARY:-/dev/null}

nothing_deleted() {
  echo "::warning title=ciflake database::$1 No cache entry deleted."
  echo "**ciflake database: $1** No cache entry deleted." >>"$summary"
}

if [ -z "${RESTORED:-}" ]; then
  nothing_deleted "no database cache entry was restored on $REF, so tonight's collect began \
a new database: the backfill starts again from its first night. Expected on the first night \
only; otherwise every entry was evicted (unused for 7 days)."
  exit 0
fi

# One line per entry of this ref: "ID REF KEY" (refs and these keys hold no spaces).
listed=$(gh cache list --repo "$GITHUB_REPOSITORY" --ref "$REF" --key ciflake-db- --limit 100 \
  --json id,ref,key --jq '.[] | "\(.id) \(.ref) \(.key)"')
if ! awk -v ref="$REF" -v key="$KEEP" '$2 == ref && $3 == key {found = 1}
    END {exit !found}' <<<"$listed"; then
  nothing_deleted "tonight's database cache entry $KEEP is not listed on $REF (its save \
failed), so the older entries are kept."
  exit 0
fi

deleted=0
while read -r id ref key; do
  if [ "$ref" = "$REF" ] && [ "$key" != "$KEEP" ]; then
    gh cache delete "$id" --repo "$GITHUB_REPOSITORY" </dev/null
    deleted=$((deleted + 1))
  fi
done <<<"$listed"
echo "ciflake database: kept $KEEP on $REF; deleted $deleted older entries of $REF." |
  tee -a "$summary"
