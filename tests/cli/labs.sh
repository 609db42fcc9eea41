#!/usr/bin/env bash
# The graded labs' controls (lessons/LABS.md): for every lab, the reference implementation — src/'s own file,
# graded through the same seam as a student's — scores full marks, and every broken solution in its
# controls/ loses exactly the checks its header names ("// loses: ID …") with the diagnostic it names
# ("// says: REGEX", matched against the grader's output). Then the grader leaves no process behind, and a
# handout (lab 04) has the starter in place of the piece and none of the answers.
# LABS="04 06" limits the labs. Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
export LAB_TIME_LIMIT=6  # the hang control waits this long per command (the default is 60)

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

# No process of any grading is left (each carried SHARDLAB_LAB_JOB in its environment).
left=$(grep -lz "^SHARDLAB_LAB_JOB=" /proc/[0-9]*/environ 2>/dev/null | grep -v "/proc/$$/" | wc -l)
if [ "$left" -le 1 ]; then ok "no process of any grading is left behind"
else fail "no process of any grading is left behind" "$left processes with SHARDLAB_LAB_JOB"; fi
[ "$fails" = 0 ]
