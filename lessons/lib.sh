# Sourced first by every lessons/NN_*/run (not a lesson itself): strict mode, the repository root as working
# directory, the build, $S (the binary), $W (the lesson's fresh work directory), and ONE way a lesson fails:
# whatever fails, the lesson's last line is ONE line saying what differs —
#  - a check of the lesson's own: `expect WHAT EXPECTED MEASURED`, or `fail "what differs, expected vs measured"`;
#  - check (a check written in awk or python), compare_ok and ledger_ok (the checks every lesson repeats):
#    the check's own FAIL line, the step and column that differ, the ledger row that does not match;
#  - anything else that fails on its own — a run refused or crashed, a non-zero exit anywhere in a pipeline
#    (pipefail) — the ERR trap: the command, its line, and its exit code or the signal that ended it.
# So that a lesson's own check is the one that speaks, what a lesson MEASURES or SHOWS never fails: a tool's
# output goes to a file first (a crash is the ERR trap's), the lines shown or measured are read from it with
# `found` (grep that finds nothing without failing) or sed/awk, and the check after them judges and says
# what it expected and what it measured. A FAIL line always reaches the lesson's own stdout, also from
# inside $(…) or a helper whose stdout is redirected.
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
exec {LESSON_OUT}>&1  # the lesson's own stdout, where a failure is reported from anywhere
LESSON_FAIL=$W/.fail  # what differs, when a subshell ends the lesson
# What end_lesson sends from a subshell: the lesson prints the FAIL line itself, after the command it was
# running, so that the FAIL line is the last line.
trap 'echo "lesson ${LESSON%%_*}: FAIL — $(cat "$LESSON_FAIL" 2>/dev/null || echo "ended by SIGTERM")" >&"$LESSON_OUT"; exit 1' TERM

# Ends the lesson — also from inside $(…), whose own exit would end only that subshell and leave the lesson
# running (echo "… $(failing command)" succeeds). What differs is one line (newlines become " | ").
end_lesson() {
  local rc=$1 what=${2//$'\n'/ | }
  if [ "$BASHPID" = "$LESSON_PID" ]; then
    echo "lesson ${LESSON%%_*}: FAIL — $what" >&"$LESSON_OUT"
  else
    echo "$what" > "$LESSON_FAIL"
    kill -TERM "$LESSON_PID"
  fi
  exit "$rc"
}

fail() { end_lesson 1 "$*"; }

# expect WHAT EXPECTED MEASURED: the lesson's own check of one value (compared as text); else ends the lesson
# with "WHAT: expected EXPECTED, measured MEASURED".
expect() { [ "$3" = "$2" ] || fail "$1: expected $2, measured ${3:-nothing}"; }

# found GREP-ARGS…: grep for lines a lesson shows or measures; finding nothing (or no file) is not a failure
# — the check after it judges what was found.
found() { grep "$@" || true; }

lesson_error() {  # the ERR trap: exit code, line, command (its first line, cut at 120 characters), pipeline codes
  local rc=$1 line=$2 cmd=${3%%$'\n'*} codes=$4 how
  trap - ERR
  [ "${#cmd}" -le 120 ] || cmd="${cmd:0:119}…"
  if [ "$rc" -gt 128 ] && kill -l $((rc - 128)) >/dev/null 2>&1; then
    how="was ended by SIG$(kill -l $((rc - 128)))"
  else
    how="exited $rc"
  fi
  [ "${codes// /}" = "$codes" ] || how="$how (the pipeline's exit codes: $codes)"
  end_lesson "$rc" "\`$cmd\` (line $line) $how"
}
trap 'lesson_error $? $LINENO "$BASH_COMMAND" "${PIPESTATUS[*]}"' ERR

# check CMD…: runs a check written in awk or python (or any command), prints what it printed; if it fails, ends
# the lesson with its own last "FAIL: …" line (else the command and its exit code).
check() {
  local out rc=0 why
  out=$("$@") || rc=$?
  [ -z "$out" ] || echo "$out"
  [ "$rc" = 0 ] && return 0
  why=$(found -E '^ *FAIL' <<<"$out" | tail -n 1 | sed -E 's/^ *FAIL:? *//')
  fail "${why:-\`${*%%$'\n'*}\` exited $rc}"
}

# compare_ok CLAIM REF RUN [compare flags]: shardlab compare passes; prints the claim with compare's verdict
# (its whole report in $COMPARED); else prints that report — the steps table with its header, the largest
# difference per column — and ends the lesson: "not so: CLAIM — max rel diff … (the column); tolerance …".
# The runs are named relative to $W, so the table's columns say which run is which.
compare_ok() {
  local name=$1 ref=$2 run=$3 root=$PWD
  shift 3
  COMPARED=$W/compare_$(basename "$ref")_$(basename "$run").txt
  if (cd "$W" && "$root/$S" compare "${ref#"$W"/}" "${run#"$W"/}" "$@") >"$COMPARED" 2>&1; then
    echo "  $name: $(tail -n 1 "$COMPARED")"
  else
    sed 's/^/  /' "$COMPARED" >&"$LESSON_OUT"
    local why
    why=$(found -m1 '^max rel diff' "$COMPARED" | sed 's/: FAIL$//')
    fail "not so: $name — ${why:-$(tail -n 1 "$COMPARED")}"
  fi
}

# ledger_ok NAME LEDGER_JSON OUT: shardlab plan --ledger matches every row exactly (its report into OUT); else
# prints each table that differs — its title, header and formula rows and the rows that differ — and ends the
# lesson with plan's own line naming the rank and the item that differ, and by how much.
ledger_ok() {
  local name=$1 ledger=$2 out=$3
  if ! "$S" plan --ledger "$ledger" >"$out" 2>&1; then
    awk '/^[^ ]/ {title = (prev_title ? title "\n" : "") $0; prev_title = 1; hdr = ""; formula = ""; shown = 0; next}
         {prev_title = 0}
         /^  -+$/ {next}
         hdr == "" && /^  [a-z]/ && !/ (yes|NO)$/ && !/!/ {hdr = $0; next}
         /^  formula / {formula = $0; next}
         / NO$| ! |!$|^  rank [0-9]+ by op|rank\(s\) differ/ {
           if (!shown) {print title; if (hdr != "") print hdr; if (formula != "") print formula; shown = 1}
           print }' "$out" | sed 's/^/  /' >&"$LESSON_OUT"
    local why
    why=$(found -m1 '^result:' "$out" | sed 's/^result: //')
    fail "$name: plan --ledger: ${why:-$(tail -n 1 "$out")}"
  fi
}
