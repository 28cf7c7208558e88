#!/usr/bin/env bash
# source_commit.sh -- bench/lib.sh's mg_source_commit, the commit every report names: in a
# repository made here, its short HEAD when the tracked files match it, with "-dirty" when one
# differs (an untracked file changes nothing), $SOURCE_COMMIT over both, and "unknown" outside
# a repository.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
unset SOURCE_COMMIT
git init -q "$tmp/repo"
echo one >"$tmp/repo/file"
git -C "$tmp/repo" add file
git -C "$tmp/repo" -c user.name=test -c user.email=test@example.com commit -q -m one
head=$(git -C "$tmp/repo" rev-parse --short HEAD)
[ "$(mg_source_commit "$tmp/repo")" = "$head" ] || fail "clean: $(mg_source_commit "$tmp/repo")"
echo new >"$tmp/repo/untracked"
[ "$(mg_source_commit "$tmp/repo")" = "$head" ] || fail "untracked: $(mg_source_commit "$tmp/repo")"
echo two >"$tmp/repo/file"
[ "$(mg_source_commit "$tmp/repo")" = "$head-dirty" ] ||
  fail "modified: $(mg_source_commit "$tmp/repo"), want $head-dirty"
[ "$(SOURCE_COMMIT=abc1234 mg_source_commit "$tmp/repo")" = abc1234 ] || fail "SOURCE_COMMIT"
mkdir "$tmp/plain"
[ "$(GIT_CEILING_DIRECTORIES=$tmp mg_source_commit "$tmp/plain")" = unknown ] ||
  fail "outside a repository: $(GIT_CEILING_DIRECTORIES=$tmp mg_source_commit "$tmp/plain")"
echo "source_commit: $head, $head-dirty, \$SOURCE_COMMIT, unknown"
