#!/usr/bin/env bash
# The graded labs' controls (lessons/LABS.md): for every lab, the reference implementation — src/'s own file,
# graded through the same seam as a student's — scores full marks, and every broken solution in its
# controls/ loses exactly the checks its header names ("// loses: ID …") with the diagnostic it names
# ("// says: REGEX", matched against the grader's output). Then the grader leaves no process behind, and a
# handout has the starter in place of the piece and none of the answers, and grades without them; a handout
# into a directory inside the tree is refused with one line.
# Run by tests/cli/labs_*.sh, which set LABS (the labs to check) and HANDOUT (the lab whose handout is checked).
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
# The controls' verdicts rest on bit-for-bit comparisons (stale_max differs in the 16th digit): on the
# recorded compute, pinned whatever kernel the caller chose (as tests/cli/reference_curves.sh does).
export OPENBLAS_CORETYPE=Haswell
export LAB_JOB_PREFIX=labsuite-$$
export LAB_COMM_TIMEOUT=5 LAB_TIME_LIMIT=10  # the watchdog (5 s) speaks before the time limit (10 s); defaults 10, 60

grade() {  # grade LAB FILE OUT: the grader's output in OUT.txt, its results in OUT.json; LOST: ids below max
  LAB_RESULTS=$3.json bash scripts/lab.sh grade "$1" "$2" >"$3.txt" 2>&1
  LOST=$(python3 -c 'import json,sys; print(" ".join(t["tags"][0] for t in json.load(open(sys.argv[1]))["tests"] if t["score"] < t["max_score"]))' "$3.json" 2>/dev/null || echo "(no results.json)")
}

for dir in lessons/*/lab; do
  nn=$(basename "$(dirname "$dir")" | cut -d_ -f1)
  [ -z "${LABS:-}" ] || [[ " $LABS " == *" $nn "* ]] || continue
  seam=$(sed -nE 's/^LAB_SEAM=(.*)/\1/p' "$dir/lab.sh")
  grade "$nn" "$seam" "$tmp/lab$nn-reference"
  if [ -z "$LOST" ]; then
    ok "lab $nn: the reference ($seam) scores full marks ($(grep -m1 -oE 'total: .*' "$tmp/lab$nn-reference.txt"))"
  else
    fail "lab $nn: the reference ($seam) scores full marks" "lost: $LOST; $(grep -A2 -m1 FAIL "$tmp/lab$nn-reference.txt" | tr -s ' ' | tr '\n' ' ')"
  fi
  # The starter as handed out: every check lost, each saying what is not written yet.
  grade "$nn" "$dir/$(basename "$seam")" "$tmp/lab$nn-starter"
  all=$(python3 -c 'import json,sys; print(" ".join(t["tags"][0] for t in json.load(open(sys.argv[1]))["tests"]))' "$tmp/lab$nn-starter.json" 2>/dev/null)
  nwy=$(grep -c 'not written yet: ' "$tmp/lab$nn-starter.txt")
  if [ -n "$all" ] && [ "$LOST" = "$all" ] && [ "$nwy" -ge "$(wc -w <<<"$all")" ]; then
    ok "lab $nn: the starter loses every check, each saying 'not written yet: …' ($(grep -m1 -oE 'not written yet: .*' "$tmp/lab$nn-starter.txt"))"
  else
    fail "lab $nn: the starter loses every check, saying 'not written yet'" "lost: ${LOST:-nothing} of $all; $nwy such lines"
  fi
  for control in "$dir"/controls/*.cpp; do
    name=$(basename "$control" .cpp)
    want=$(sed -nE 's#^// loses: *##p' "$control")
    says=$(sed -nE 's#^// says: *##p' "$control")
    grade "$nn" "$control" "$tmp/lab$nn-$name"
    if [ "$LOST" != "$want" ]; then
      fail "lab $nn control $name loses exactly: $want" "lost: ${LOST:-nothing}"
    elif ! grep -qE "$says" "$tmp/lab$nn-$name.txt"; then
      fail "lab $nn control $name says /$says/" "the grader said: $(grep -A1 FAIL "$tmp/lab$nn-$name.txt" | head -n 4 | tr -s ' ' | tr '\n' ' ')"
    else
      ok "lab $nn control $name loses exactly $want, saying: $(grep -m1 -oE "$says" "$tmp/lab$nn-$name.txt")"
    fi
  done
done

# The handout: the piece is the starter, no control or alternative implementation is there, nothing in it
# holds the reference's lines; with shardlab's objects copied in (timestamps kept, so nothing else rebuilds)
# it grades a correct solution full marks against the recorded expected outputs alone.
if [ -n "${HANDOUT:-}" ]; then
  # Inside the tree (a new directory, one nested in lessons/, the tree itself, a symlink from outside into build/):
  # refused with one line, nothing created — the build and the graders would take a handout there for the tree's.
  ln -s "$PWD/build" "$tmp/into_tree"
  for inside in "handout-$$" "lessons/handout-$$/x" . "$tmp/into_tree/handout-$$"; do
    bash scripts/lab.sh handout "$HANDOUT" "$inside" >"$tmp/inside.out" 2>"$tmp/inside.err"
    rc=$?
    if [ $rc = 2 ] && [ "$(wc -l <"$tmp/inside.err")" = 1 ] && grep -q "is inside this tree" "$tmp/inside.err" &&
      [ ! -s "$tmp/inside.out" ] && [ ! -e "handout-$$" ] && [ ! -e "lessons/handout-$$" ] && [ ! -e "build/handout-$$" ]; then
      ok "handout $HANDOUT into $inside (inside the tree): refused with one line, nothing created"
    else
      fail "handout $HANDOUT into $inside refused" "exit $rc: $(head -c 300 "$tmp/inside.err" "$tmp/inside.out" | tr '\n' '|')"
      rm -rf "handout-$$" "lessons/handout-$$" "build/handout-$$"
    fi
  done
  dir=$(ls -d lessons/"$HANDOUT"_*/lab)
  seam=$(sed -nE 's/^LAB_SEAM=(.*)/\1/p' "$dir/lab.sh")
  ho=$tmp/handout
  bash scripts/lab.sh handout "$HANDOUT" "$ho" >"$tmp/handout.txt" 2>&1
  leaks=$(grep -vE '^(//|#include| *$|namespace|}|int mod|template|#define|#undef)' "$seam" | sed 's/^ *//' | sort -u |
    while read -r line; do [ ${#line} -lt 12 ] || grep -rlF --exclude-dir=build -- "$line" "$ho" | head -n 1; done | sort -u)
  if ! cmp -s "$ho/$seam" "$dir/$(basename "$seam")"; then fail "handout $HANDOUT: $seam is the starter" "it differs from $dir"
  elif [ -n "$(ls -d "$ho"/lessons/*/lab/controls "$ho"/tests/mutants.sh 2>/dev/null)" ]; then fail "handout $HANDOUT: no controls, no tests/mutants.sh" "$(ls -d "$ho"/lessons/*/lab/controls "$ho"/tests/mutants.sh 2>/dev/null | head -n 2)"
  elif [ -n "$leaks" ]; then fail "handout $HANDOUT: no file holds a line of the reference $seam" "found in: $leaks"
  else ok "handout $HANDOUT: $seam is the starter; no controls, tests/mutants.sh or line of the reference in the tree"; fi
  mkdir -p "$ho/build" "$tmp/student"
  cp -a build/src build/.flags build/.deps-ok "$ho/build/"
  cp "$seam" "$tmp/student/"
  (cd "$ho" && LAB_RESULTS=$tmp/student/results.json bash scripts/lab.sh grade "$HANDOUT" "$tmp/student/$(basename "$seam")") >"$tmp/handout-grade.txt" 2>&1
  if grep -qE 'total: ([0-9]+) / \1 points' "$tmp/handout-grade.txt"; then ok "handout $HANDOUT grades a correct solution without the reference: $(grep -oE 'total: .*' "$tmp/handout-grade.txt")"
  else fail "handout $HANDOUT grades a correct solution full marks" "$(grep -E 'total|FAIL' "$tmp/handout-grade.txt" | head -n 3 | tr -s ' ')"; fi
fi

# No process of this suite's gradings is left (each carried SHARDLAB_LAB_JOB=labsuite-PID-… in its environment).
left=$(grep -lz "^SHARDLAB_LAB_JOB=$LAB_JOB_PREFIX-" /proc/[0-9]*/environ 2>/dev/null | grep -v "/proc/$$/" | wc -l)
if [ "$left" = 0 ]; then ok "no process of any grading is left behind"
else fail "no process of any grading is left behind" "$left processes with SHARDLAB_LAB_JOB"; fi
[ "$fails" = 0 ]
