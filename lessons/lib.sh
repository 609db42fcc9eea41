# Sourced first by every lessons/NN_*/run (not a lesson itself): strict mode, the repository root as working
# directory, the build, $S (the binary), $W (the lesson's fresh work directory), and ONE way a lesson fails:
# whatever fails, the lesson's last line says what differs —
#  - a check of the lesson's own: `fail "what differs, expected vs measured"`;
#  - check (a check written in awk or python), compare_ok and ledger_ok (the checks every lesson repeats):
#    the check's own FAIL line, the step and column that differ, the ledger row that does not match;
#  - anything else that fails on its own — a run refused or crashed, a non-zero exit anywhere in a pipeline
#    (pipefail) — the ERR trap: the command, its line, and its exit code or the signal that ended it.
set -Eeuo pipefail
LESSON_DIR=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
LESSON=$(basename "$LESSON_DIR")
cd "$LESSON_DIR/../.."
make -s build/shardlab >/dev/null
S=build/shardlab
W=build/lessons/$LESSON
rm -rf "$W"
mkdir -p "$W"

LESSON_PID=$$
trap 'exit 1' TERM # what end_lesson sends: the FAIL line is printed already

# Ends the lesson — also from inside $(…), whose own exit would end only that subshell and leave the lesson
# running (echo "… $(failing command)" succeeds).
# The FAIL line goes to stderr from inside $(…), whose stdout would be captured.
end_lesson() {
  local rc=$1 line="lesson ${LESSON%%_*}: FAIL — $2"
  if [ "$BASHPID" = "$LESSON_PID" ]; then
    echo "$line"
  else
    echo "$line" >&2
    kill -TERM "$LESSON_PID"
  fi
  exit "$rc"
}

fail() { end_lesson 1 "$*"; }

lesson_error() {  # the ERR trap: exit code, line, command
  local rc=$1 line=$2 cmd=$3 how
  trap - ERR
  if [ "$rc" -gt 128 ] && kill -l $((rc - 128)) >/dev/null 2>&1; then
    how="was ended by SIG$(kill -l $((rc - 128)))"
  else
    how="exited $rc"
  fi
  end_lesson "$rc" "\`$cmd\` (line $line) $how"
}
trap 'lesson_error $? $LINENO "$BASH_COMMAND"' ERR

# check CMD…: runs a check written in awk or python (or any command), prints what it printed; if it fails, ends
# the lesson with its own last "FAIL: …" line (else the command and its exit code).
check() {
  local out rc=0 why
  out=$("$@") || rc=$?
  [ -z "$out" ] || echo "$out"
  [ "$rc" = 0 ] && return 0
  why=$(grep -E '^ *FAIL' <<<"$out" | tail -n 1 | sed -E 's/^ *FAIL:? *//')
  fail "${why:-\`$*\` exited $rc}"
}

# compare_ok CLAIM REF RUN [compare flags]: shardlab compare passes; prints the claim with compare's verdict;
# else ends the lesson: "not so: CLAIM", naming the step and column that differ.
compare_ok() {
  local name=$1 ref=$2 run=$3 out
  shift 3
  out=$W/compare_$(basename "$ref")_$(basename "$run").txt
  if "$S" compare "$ref" "$run" "$@" >"$out" 2>&1; then
    echo "  $name: $(tail -n 1 "$out")"
  else
    tail -n 4 "$out" | sed 's/^/  /'
    fail "not so: $name — $(grep -m1 -o 'max rel diff [^;]*' "$out" || tail -n 1 "$out")"
  fi
}

# ledger_ok NAME LEDGER_JSON OUT: shardlab plan --ledger matches every row exactly (its report into OUT); else
# ends the lesson with plan's own line naming the rank and the item that differ, and by how much.
ledger_ok() {
  local name=$1 ledger=$2 out=$3
  if ! "$S" plan --ledger "$ledger" >"$out" 2>&1; then
    grep -E '!|  NO|MISMATCH' "$out" | head -n 8 | sed 's/^/  /'
    fail "$name: plan --ledger: $(grep -m1 '^result:' "$out" | sed 's/^result: //' || tail -n 1 "$out")"
  fi
}
