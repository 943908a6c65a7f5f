#!/usr/bin/env bash
# CI: the rolling-upgrade rule. During an upgrade, processes of the previous version keep running
# on a database that the new version has already migrated, so a migration must stay compatible with
# the previous release's code for one release. This runs the previous commit's whole test suite
# (PLAZA_PREVIOUS_REF, default HEAD~1: the last state of main) on the schema of this commit: its
# tests' databases are migrated with this commit's migrations/ (docs/operations.md, Upgrades).
# When migrations/ did not change since that commit the schema is the same and there is nothing to
# check (PLAZA_UPGRADE_CHECK_ALWAYS=1 runs it anyway).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PG_URL="${PLAZA_CI_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
PREVIOUS_REF="${PLAZA_PREVIOUS_REF:-HEAD~1}"
cd "$ROOT"

if ! previous="$(git rev-parse --verify --quiet "$PREVIOUS_REF^{commit}")"; then
  echo "upgrade check SKIPPED: $PREVIOUS_REF is not in this clone's history (a shallow clone?)"
  exit 0
fi
if git diff --quiet "$previous" HEAD -- migrations/ && [ "${PLAZA_UPGRADE_CHECK_ALWAYS:-0}" != 1 ]; then
  echo "upgrade check: migrations/ unchanged since ${previous:0:12}; the previous code already ran on this schema"
  exit 0
fi
# A baseline fold (migrations/001_baseline.sql new since that commit; it replaced every file before
# it): what a fold must keep is the schema, so migrations/schema.sql must be the same as before (the
# drift test checks that the baseline produces it). The previous code's migration tests test the
# removed files by name (applying 001–004 alone, a changed 002_webhooks.sql…), which no longer exist:
# they cannot pass by their nature and are left out; the rest of its suite runs on the new schema.
fold=0
if [ -f migrations/001_baseline.sql ] && ! git cat-file -e "$previous:migrations/001_baseline.sql" 2>/dev/null; then
  if ! git diff --quiet "$previous" HEAD -- migrations/schema.sql; then
    echo "upgrade check FAILED: the baseline fold since ${previous:0:12} changed the schema (a fold must create exactly the schema before it):" >&2
    git diff "$previous" HEAD -- migrations/schema.sql >&2
    exit 1
  fi
  fold=1
fi
echo "== upgrade check: the suite of ${previous:0:12} on the schema of $(git rev-parse --short=12 HEAD)"
git diff --stat "$previous" HEAD -- migrations/

WORK="$(mktemp -d)"
cleanup() {
  git -C "$ROOT" worktree remove --force "$WORK/previous" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
git worktree add --quiet --detach "$WORK/previous" "$previous"
cd "$WORK/previous"
if cmp -s package-lock.json "$ROOT/package-lock.json" && [ -d "$ROOT/node_modules" ]; then
  ln -s "$ROOT/node_modules" node_modules # the same dependencies: no second install
else
  npm ci --no-audit --no-fund --loglevel=error
fi
# The previous code, this commit's schema.
rm -rf migrations
cp -r "$ROOT/migrations" migrations
npx --no-install tsc -p tsconfig.json
# Known breaks (scripts/upgrade-compat-known-breaks): a migration that the previous code cannot
# follow in one place, written down with the reason and in docs/operations.md. Their tests are left
# out only when the previous commit predates that migration.
while read -r migration test reason; do
  case "$migration" in ''|'#'*) continue ;; esac
  if ! git -C "$ROOT" cat-file -e "$previous:migrations/$migration" 2>/dev/null; then
    echo "upgrade check: leaving out $test ($migration: $reason)"
    rm -f "dist/$test"
  fi
done < "$ROOT/scripts/upgrade-compat-known-breaks"
if [ "$fold" = 1 ]; then
  echo "upgrade check: a baseline fold with the same schema.sql; leaving out src/db/migrations.test.js (it tests the migration files the fold removed, by name)"
  rm -f dist/src/db/migrations.test.js
fi
DATABASE_URL="$PG_URL" node scripts/run-tests.mjs
echo "upgrade check: OK, the previous code passes its suite on the new schema"
