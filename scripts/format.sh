#!/usr/bin/env bash
# `make format`: every C++ file of src/, tests/ and bench/ through clang-format (.clang-format is the law on
# whitespace). `scripts/format.sh --check` (inside `make test`): changes nothing, names each file that drifts and
# the first line that would change, exits 1 when any does. clang-format's layout differs between major versions,
# so the check holds the tree to the version it is formatted with (FORMAT_VERSION) and says so and passes
# where another version, or none, is installed; `make format` runs with any version.
# The lessons' lab files (starters, references, controls) are left as their authors wrote them.
set -uo pipefail
cd "$(dirname "$0")/.."
FORMAT_VERSION=14
files=$(find src tests bench \( -name '*.cpp' -o -name '*.h' \) -type f | sort)
if ! command -v clang-format >/dev/null 2>&1; then
  echo "format: clang-format is not installed: nothing checked (make deps does not install it; apt-get install clang-format)"
  exit 0
fi
version=$(clang-format --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
if [ "${1:-}" != --check ]; then
  echo "$files" | xargs clang-format -i
  echo "format: $(echo "$files" | wc -l) files through clang-format $version"
  exit 0
fi
if [ "$version" != "$FORMAT_VERSION" ]; then
  echo "format: clang-format $version is installed; the tree is held to version $FORMAT_VERSION's layout: not checked here"
  exit 0
fi
drift=0
for f in $files; do
  if ! out=$(clang-format "$f" | diff "$f" - 2>&1); then
    drift=$((drift + 1))
    echo "FAIL - $f drifts from .clang-format, first at line $(echo "$out" | sed -n '1s/^\([0-9]*\).*/\1/p'): $(echo "$out" | sed -n '2p' | cut -c1-120)"
  fi
done
if [ $drift = 0 ]; then echo "ok - $(echo "$files" | wc -l) C++ files as clang-format $version lays them out"
else echo "($drift files drift: make format fixes them)"; exit 1; fi
