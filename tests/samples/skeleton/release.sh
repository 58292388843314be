#!/usr/bin/env bash
# Builds, tests and publishes a release of the session store.
# Usage: release.sh [--dry-run] VERSION

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly DIST_DIR="$ROOT/dist"
export PYTHONDONTWRITEBYTECODE=1
DRY_RUN=0
VERSION=""

# shellcheck source=lib/log.sh
source "$ROOT/scripts/lib/log.sh"

# Prints how to call this script, then exits.
usage() {
  cat <<USAGE
usage: release.sh [--dry-run] VERSION
USAGE
  exit 2
}

# Parses the command line into DRY_RUN and VERSION.
parse_args() {
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --dry-run) DRY_RUN=1 ;;
      -h|--help) usage ;;
      *) VERSION="$1" ;;
    esac
    shift
  done
  [[ -n "$VERSION" ]] || usage
}

check_clean_tree() {
  if [[ -n "$(git -C "$ROOT" status --porcelain)" ]]; then
    log_error "working tree is not clean"
    return 1
  fi
}

function build_dist {
  rm -rf "$DIST_DIR"
  python -m build --outdir "$DIST_DIR" "$ROOT"
}

run_tests() (
  cd "$ROOT"
  .venv/bin/python -m pytest -q
)

publish() {
  if (( DRY_RUN )); then
    log_info "dry run: would upload $(ls "$DIST_DIR")"
    return 0
  fi
  twine upload "$DIST_DIR"/*
  git tag -a "v$VERSION" -m "release $VERSION"
}

main() {
  parse_args "$@"
  check_clean_tree
  run_tests
  build_dist
  publish
}

main "$@"
