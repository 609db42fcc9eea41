#!/usr/bin/env bash
# Graded labs (lessons/LABS.md): the student writes one textbook piece, shardlab grades it to the bit.
#   scripts/lab.sh start   NN DIR       the lab's README and starter file copied into DIR (never over a file)
#   scripts/lab.sh grade   NN SOLUTION  SOLUTION built in place of the lab's seam (`make seam`, nothing in src/
#                                       edited), every check run with a time limit, a score table, and
#                                       results.json beside SOLUTION (Gradescope's format)
#   scripts/lab.sh handout NN DIR       this tree with the piece replaced by its starter and without the controls:
#                                       what a TA gives out; it grades against the recorded expected outputs.
#                                       DIR is new or empty, and outside this tree
#   scripts/lab.sh record  NN           those expected outputs (lab/expected/), from shardlab's own build
# A lab is lessons/NN_*/lab/: README.md, the starter (the seam's file name), lab.sh (its checks, sourced here),
# expected/ (recorded runs) and controls/ (broken solutions that must lose the points they name).
# Every command a check runs is limited in time (a hang is a failed check) and, with all it started, ended
# afterwards: the grader never hangs and leaves no process behind.
set -uo pipefail
CALLER_DIR=$PWD  # a relative SOLUTION, DIR or LAB_RESULTS is the caller's
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
export PYTHONDONTWRITEBYTECODE=1  # no __pycache__ of ours in the tree (the tree check sees every file)
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
source scripts/lab_checks.sh  # the checks' helpers: limited, mpi, curve_check, ledger_check, ...

die() {
  echo "lab: error: $*" >&2
  exit 2
}

# NN (4 or 04) → lessons/04_*/lab, or a one-line error naming the labs there are.
find_lab() {
  local nn d all
  [[ ${1:-} =~ ^[0-9]+$ ]] && nn=$(printf %02d "$((10#$1))") || nn=${1:-}
  d=$(ls -d lessons/"$nn"_*/lab 2>/dev/null | head -n 1)
  all=$(ls -d lessons/*/lab 2>/dev/null | sed -E 's#lessons/([0-9]+)_.*#\1#' | tr '\n' ' ')
  [ -n "$nn" ] || die "LAB=NN names the lab (one of: $all)"
  [ -n "$d" ] || die "there is no lab $nn (the labs are: $all)"
  LAB=$nn LAB_DIR=$d
  LAB_CHECKS=()
  source "$LAB_DIR/lab.sh"
  STARTER=$LAB_DIR/$(basename "$LAB_SEAM")
}

cmd_start() {
  local dest=${1:-}
  [ -n "$dest" ] || die "DIR=... names the directory the starter goes into"
  [[ $dest == /* ]] || dest=$CALLER_DIR/$dest
  mkdir -p "$dest" || die "cannot create $dest"
  local f
  for f in "$STARTER" "$LAB_DIR/README.md"; do
    local to=$dest/$(basename "$f")
    [ "$f" = "$LAB_DIR/README.md" ] && to=$dest/LAB_README.md
    if [ -e "$to" ]; then
      echo "lab: kept $to (it exists; nothing is overwritten)"
    else
      cp "$f" "$to" && echo "lab: wrote $to"
    fi
  done
  echo "Write the functions that say \"not written yet\" in $dest/$(basename "$STARTER"), then grade it:"
  echo "  make lab LAB=$LAB SOLUTION=$dest/$(basename "$STARTER")"
}

cmd_handout() {
  local dest=${1:-}
  [ -n "$dest" ] || die "DIR=... names the directory the handout goes into"
  [[ $dest == /* ]] || dest=$CALLER_DIR/$dest
  # Never inside this tree (symlinks resolved): the build (find src), the test runner and the graders would pick the
  # copy up as part of the tree, and a tree copied into itself can overwrite its own files.
  local real root
  real=$(realpath -m -- "$dest") root=$(pwd -P)
  [[ "$real/" != "$root/"* ]] ||
    die "DIR=$dest is inside this tree ($root): the build and the graders would pick a handout there up, and copying the tree into itself could overwrite its files; give a directory outside it"
  [ ! -e "$dest" ] || [ -z "$(ls -A "$dest" 2>/dev/null)" ] || die "$dest exists and is not empty (nothing is overwritten)"
  mkdir -p "$dest" || die "cannot create $dest"
  # The files under version control (or, outside git, the tree without build/ and runs/), timestamps kept.
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$dest" || die "copying the tree into $dest failed"
  else
    tar --exclude=./build --exclude=./runs -cf - . | tar -xf - -C "$dest" || die "copying the tree into $dest failed"
  fi
  cp "$STARTER" "$dest/$LAB_SEAM"
  # What would give the answer away: every lab's controls, the seams' alternative implementations.
  rm -rf "$dest"/lessons/*/lab/controls "$dest"/tests/mutants.sh
  # Another lab's starter for the same file has this piece written (labs 10 and 11 share megatron_fg.cpp).
  local other
  for other in lessons/*/lab/lab.sh; do
    [ "$(dirname "$other")" != "$LAB_DIR" ] && grep -qx "LAB_SEAM=$LAB_SEAM" "$other" &&
      rm -f "$dest/$(dirname "$other")/$(basename "$LAB_SEAM")"
  done
  echo "lab: wrote a handout of lab $LAB into $dest: $LAB_SEAM is the starter. Left out: every lab's controls"
  echo "  and tests/mutants.sh (they hold pieces' code). The other labs' pieces stay in src/ (give the handouts"
  echo "  out in the labs' order). It grades against $LAB_DIR/expected/: make lab LAB=$LAB SOLUTION=FILE"
  echo "  (the first grade there compiles all of shardlab: minutes). make test is not meant for a handout."
}

cmd_record() {
  local d
  BUILD_DIR=build
  LAB_WORK=$LAB_DIR/expected.new
  rm -rf "$LAB_WORK"
  mkdir -p "$LAB_WORK"
  RECORDING=1
  for d in "${LAB_RUNS[@]}"; do
    run_named "$d" || die "recording $d failed: $WHY"
    mkdir -p "$LAB_WORK/$d.keep"
    cp "$LAB_WORK/$d/loss.csv" "$LAB_WORK/$d/config.json" "$LAB_WORK/$d.keep/"
  done
  rm -rf "$LAB_DIR/expected"
  mkdir -p "$LAB_DIR/expected"
  for d in "${LAB_RUNS[@]}"; do mv "$LAB_WORK/$d.keep" "$LAB_DIR/expected/$d"; done
  echo "$COMPUTE" >"$LAB_DIR/expected/compute.txt"
  rm -rf "$LAB_WORK"
  echo "lab: recorded ${LAB_RUNS[*]} into $LAB_DIR/expected/ ($COMPUTE)"
}

# Where results.json goes: LAB_RESULTS, else beside the solution. What is there before the grade never stands
# for it: the grader's own earlier results are removed, anything else is moved aside (kept, never lost).
results_path() {
  local r=${LAB_RESULTS:-$(dirname "$1")/results.json}
  [[ $r == /* ]] || r=$CALLER_DIR/$r
  if [ -e "$r" ] || [ -L "$r" ]; then
    if [ -f "$r" ] && [ ! -L "$r" ] && grep -q '"shardlab_lab"' "$r" 2>/dev/null; then
      rm -f -- "$r"
    else
      local aside
      aside=$r.before-grade-$(date +%Y%m%d-%H%M%S)-$$
      mv -- "$r" "$aside" || die "cannot move $r, which this grader did not write, out of the way of the results"
      echo "lab: $r was not written by this grader: moved to $aside; the grade's results go to $r" >&2
    fi
  fi
  echo "$r"
}

# Every file of the tree outside build/ and runs/ — its type, path, link target and checksum — and of .git what
# runs code (its config and hooks), to tell whether a grade changed the tree. And the judge (build/shardlab).
tree_state() {
  local skip=(\( -path ./build -o -path ./runs -o -path ./.git \) -prune -o)
  find . "${skip[@]}" -printf '%y %p %l\n' | sort
  find . "${skip[@]}" -type f -print0 | sort -z | xargs -0 -r sha256sum
  find .git/config .git/hooks -printf '%y %p %l\n' 2>/dev/null | sort
  find .git/config .git/hooks -type f -print0 2>/dev/null | sort -z | xargs -0 -r sha256sum
}
# What changed between two tree_state listings (given as text): "deleted F", "new F", "changed F".
tree_changes() {
  local paths='s/^[a-z] \([^ ]*\) .*/\1/p'
  diff <(sed -n "$paths" <<<"$1" | sort -u) <(sed -n "$paths" <<<"$2" | sort -u) |
    sed -n 's/^< \(\.\/\)\{0,1\}/deleted /p; s/^> \(\.\/\)\{0,1\}/new /p'
  join -j 2 <(grep -E '^[0-9a-f]{64} ' <<<"$1" | sort -k2) <(grep -E '^[0-9a-f]{64} ' <<<"$2" | sort -k2) |
    awk '$2 != $3 {sub(/^\.\//, "", $1); print "changed " $1}'
}

# The grade's processes, ended: every process that carries this grade's SHARDLAB_LAB_JOB (lab_checks.sh).
interrupted() {
  trap '' INT TERM HUP
  end_leftovers
  sleep 0.2
  end_leftovers  # what was being started as the first pass ran
  echo "lab: interrupted: the grade was stopped and every process it started ended; no results written" >&2
  exit 130
}

cmd_grade() {
  local given=${1:-}
  [ -n "$given" ] || die "SOLUTION=FILE names your file (make lab-start LAB=$LAB DIR=... writes a starter)"
  [[ $given == /* ]] || given=$CALLER_DIR/$given
  [ -f "$given" ] || die "SOLUTION=$given is not a file"
  local sol start=$SECONDS id res
  sol=$(realpath -- "$given") || die "SOLUTION=$given: cannot resolve its path"
  id=$(printf %s "$sol" | sha1sum | cut -c1-10)
  BUILD_DIR=build/labs/$LAB-$id
  LAB_WORK=$BUILD_DIR/work
  rm -rf "$LAB_WORK" "$BUILD_DIR/solution"
  mkdir -p "$LAB_WORK" "$BUILD_DIR/solution"
  # The solution as the grader's own copy under the seam's name: no path of the student's reaches make or a
  # shell (spaces, quotes, backticks are only characters of a file name).
  local copy=$BUILD_DIR/solution/$(basename "$LAB_SEAM")
  cp -- "$sol" "$copy" || die "cannot copy SOLUTION=$given"
  res=$(results_path "$sol") || exit 2
  export -n LAB_RESULTS  # the solution's processes are not told where the results go
  trap interrupted INT TERM HUP
  echo "lab $LAB — $LAB_TITLE: grading $sol (build: $BUILD_DIR/)"
  # The tree as it was, held by the grader itself (a file of it under build/ could be rewritten by the solution).
  local before
  before=$(tree_state)
  local ids=() names=() points=() maxes=() outputs=() total=0 max=0 entry cid pts title built=1 why=""
  # The build (and shardlab's own, which judges): the compiler's first error (file:line: message) is the
  # diagnostic, not make's page. Run in the background, so that Ctrl-C ends the grade at once (the trap).
  timeout 900 make -s build/shardlab seam SEAM="$LAB_SEAM" WITH="$copy" SEAM_DIR="$BUILD_DIR" SEAM_BINS=shardlab \
    >"$BUILD_DIR/build.log" 2>&1 &
  if wait $!; then
    JUDGE_SUM=$(sha256sum <"$JUDGE")  # the judge as built: lab_checks.sh judge() runs only this one
  else
    built=0
    why=$(grep -m1 -E ':[0-9]+:[0-9]+: (fatal )?error:' "$BUILD_DIR/build.log")
    why=${why//"$ROOT/$copy"/$(basename "$sol")}
    why=${why//"$copy"/$(basename "$sol")}
    [ -n "$why" ] || why=$(grep -m1 -E 'undefined reference to' "$BUILD_DIR/build.log" | sed -E 's/.*(undefined reference to .*)/\1/')
    [ -n "$why" ] && why="does not build: $why" || why="does not build: $(grep -m1 -iE 'error' "$BUILD_DIR/build.log")"
    echo "  $why"
    echo "  (the compiler's whole output: $BUILD_DIR/build.log)"
  fi
  for entry in "${LAB_CHECKS[@]}"; do
    IFS='|' read -r cid pts title <<<"$entry"
    local out=$LAB_WORK/check_$cid.txt got=0
    if [ $built = 1 ]; then
      # Each file a check writes (its log, a run's outputs) is capped (lab_checks.sh LAB_FILE_LIMIT_KB).
      (ulimit -f "$LAB_FILE_LIMIT_KB" && check_"$cid") >"$out" 2>&1 &
      if wait $!; then got=$pts; fi
      end_leftovers
    else
      echo "$why" >"$out"
    fi
    ids+=("$cid") names+=("$title") points+=("$got") maxes+=("$pts") outputs+=("$(tail -n 3 "$out")")
    total=$((total + got)) max=$((max + pts))
    printf '  %2d / %-2d  %-4s  %s\n' "$got" "$pts" "$([ "$got" = "$pts" ] && echo ok || echo FAIL)" "$title"
    [ "$got" = "$pts" ] || sed 's/^/              /' "$out" | tail -n 3
  done
  # The tree as it was: a grade that changed it (a solution deleting or writing files there) scores nothing.
  local changed="" after
  after=$(tree_state)
  if [ "$before" != "$after" ]; then
    changed=$(tree_changes "$before" "$after" | head -n 5 | paste -sd ';' | sed 's/;/; /g')
    echo "  FAIL: the tree changed during the grade (${changed:-its listing differs}): the grade is 0"
    total=0
  fi
  echo "  total: $total / $max points ($((SECONDS - start)) s)"
  # Written whole under another name, then renamed into place: never half a file, never another's.
  python3 - "$res.tmp-$$" "$LAB" "$total" "$max" "$((SECONDS - start))" "$changed" "${#names[@]}" "${names[@]}" \
    "${points[@]}" "${maxes[@]}" "${outputs[@]}" "${ids[@]}" <<'PY' && mv -f -- "$res.tmp-$$" "$res" ||
import json, sys
path, lab, total, mx, secs, changed, n = sys.argv[1:8]
n = int(n); a = sys.argv[8:]
tests = [{"name": a[i], "score": int(a[n + i]), "max_score": int(a[2 * n + i]), "output": a[3 * n + i],
          "tags": [a[4 * n + i]]} for i in range(n)]
if changed:
    tests.append({"name": "the grade leaves the tree unchanged", "score": 0, "max_score": 0,
                  "output": "the tree changed: " + changed, "tags": ["tree"]})
json.dump({"score": int(total), "max_score": int(mx), "execution_time": int(secs), "tests": tests,
           "extra_data": {"shardlab_lab": lab}}, open(path, "w"), indent=2)
PY
    { rm -f -- "$res.tmp-$$"; echo "lab: could not write $res" >&2; }
  echo "  results: $res"
  trap - INT TERM HUP
  [ "$total" = "$max" ]
}

action=${1:-}
[ $# -ge 1 ] && shift
case "$action" in
  start | grade | handout | record)
    find_lab "${1:-}"
    shift
    "cmd_$action" "$@"
    ;;
  *) die "usage: scripts/lab.sh start|grade|handout|record NN [DIR|SOLUTION]" ;;
esac
