#!/usr/bin/env bash
# The grader itself, as a course runs it (scripts/lab.sh grade, on lab 04), attacked as a student, a TA's script
# or an impatient user would:
#  (1) any path works as SOLUTION: spaces, quotes, backticks and $(…) in it are only characters — a correct
#      solution there scores full marks through `make lab`, and nothing the path spells is run;
#  (2) results.json is always the grader's, written when the grade ends: one another program wrote (saying 10/10)
#      is moved aside, kept, and the grade's own takes its place; the grader's results of an earlier grade never
#      stand for this one (a solution that no longer builds scores 0 there);
#  (3) a grade that changes the tree — a solution deleting lab/README.md, one appending to lab/expected/ and
#      writing into src/, one planting a .cpp in a __pycache__ of src/ (the next build would compile it), one
#      naming a hook in .git/config — scores 0, naming the files; one that replaces the judge (build/shardlab) gets
#      no verdict from it (graded in a handout, so that this tree is never touched);
#  (4) Ctrl-C (SIGINT to the grader's process group) ends the whole grade within 3 s: exit 130, no process of it
#      left, no results written;
#  (5) a solution printing 60 MB (lines to stdout or stderr, or one line) loses its checks with "wrote more than … kB", and the
#      grade's files stay small.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"
export OPENBLAS_CORETYPE=Haswell  # the recorded curves' kernel, as tests/cli/lib_labs.sh pins it
export LAB_JOB_PREFIX=gradersuite-$$
export LAB_COMM_TIMEOUT=5 LAB_TIME_LIMIT=20
REF=src/comm/ring_steps.cpp
total() { grep -m1 -oE 'total: [0-9]+ / [0-9]+ points' "$1"; }
score() { python3 -c 'import json,sys; r = json.load(open(sys.argv[1])); print(r["score"], "/", r["max_score"])' "$1" 2>/dev/null; }
# with_static_init NAME CODE: the reference solution plus a static initializer running CODE (C++ statements).
with_static_init() {
  mkdir -p "$tmp/$1" && cp "$REF" "$tmp/$1/ring_steps.cpp"
  cat >>"$tmp/$1/ring_steps.cpp" <<EOF
#include <cstdio>
#include <fstream>
#include <string>
namespace {
struct Extra {
  Extra() { $2 }
} extra;
}  // namespace
EOF
}

# ---------------------------------------------------------------- (1) any path as SOLUTION
for weird in "with space/and 'quote\"s" 'tick`touch INJECTED_TICK`/$(touch INJECTED_DOLLAR)'; do
  d=$tmp/$weird
  mkdir -p "$d" && cp "$REF" "$d/ring_steps.cpp"
  (cd "$tmp" && make -s -C "$OLDPWD" lab LAB=04 SOLUTION="$d/ring_steps.cpp") >"$tmp/p.out" 2>&1
  rc=$?
  injected=$(find "$tmp" . -maxdepth 1 -name 'INJECTED*' 2>/dev/null | head -n 1)
  if [ $rc = 0 ] && grep -qE 'total: 10 / 10 points' "$tmp/p.out" && [ -z "$injected" ] &&
    [ "$(score "$d/results.json")" = "10 / 10" ]; then
    ok "(1) SOLUTION in '$weird': full marks through make lab, results.json beside it, nothing run"
  else
    fail "(1) SOLUTION in '$weird'" "exit $rc, '$(total "$tmp/p.out")', injected: '${injected}', results: '$(score "$d/results.json")': $(grep -m2 -E 'FAIL|error|build' "$tmp/p.out" | tr '\n' '|')"
  fi
  rm -f INJECTED_TICK INJECTED_DOLLAR "$tmp"/INJECTED_*
done

# ---------------------------------------------------------------- (2) results.json is the grader's
mkdir -p "$tmp/pre" && cp lessons/04_ring_allreduce/lab/ring_steps.cpp "$tmp/pre/"  # the starter: 0 points
echo '{"score": 10, "max_score": 10, "tests": []}' >"$tmp/pre/results.json"
bash scripts/lab.sh grade 04 "$tmp/pre/ring_steps.cpp" >"$tmp/pre.out" 2>&1
aside=$(ls "$tmp/pre"/results.json.before-grade-* 2>/dev/null | head -n 1)
if [ "$(score "$tmp/pre/results.json")" = "0 / 10" ] && [ -n "$aside" ] && grep -q '"score": 10' "$aside" &&
  grep -q "was not written by this grader: moved to" "$tmp/pre.out"; then
  ok "(2) a results.json saying 10/10 beside the starter: moved aside to $(basename "$aside"), the grade's 0 / 10 in its place"
else
  fail "(2) a pre-written results.json never stands for the grade" "results.json says '$(score "$tmp/pre/results.json")', aside: '$aside'; $(grep -m1 results "$tmp/pre.out")"
fi
mkdir -p "$tmp/again" && cp "$REF" "$tmp/again/ring_steps.cpp"
bash scripts/lab.sh grade 04 "$tmp/again/ring_steps.cpp" >"$tmp/again1.out" 2>&1
echo 'this does not compile' >>"$tmp/again/ring_steps.cpp"
bash scripts/lab.sh grade 04 "$tmp/again/ring_steps.cpp" >"$tmp/again2.out" 2>&1
if [ "$(total "$tmp/again1.out")" = "total: 10 / 10 points" ] && [ "$(score "$tmp/again/results.json")" = "0 / 10" ] &&
  grep -q 'does not build: ring_steps.cpp:' "$tmp/again2.out" && [ -z "$(ls "$tmp/again"/results.json.* 2>/dev/null)" ]; then
  ok "(2) the grader's own 10/10 of before, then a solution that no longer builds: results.json says 0 / 10 ($(grep -m1 -o 'does not build: [^:]*:[0-9]*' "$tmp/again2.out"))"
else
  fail "(2) an earlier grade's results never stand for this one" "first '$(total "$tmp/again1.out")', then results.json '$(score "$tmp/again/results.json")': $(grep -m1 'build' "$tmp/again2.out")"
fi

# ---------------------------------------------------------------- (3) the tree unchanged
ho=$tmp/handout
bash scripts/lab.sh handout 04 "$ho" >/dev/null 2>&1 || fail "setup: a handout of lab 04" "scripts/lab.sh handout failed"
mkdir -p "$ho/build" && cp -a build/src build/.flags build/.deps-ok "$ho/build/"
with_static_init deletes 'std::remove("lessons/04_ring_allreduce/lab/README.md");'
with_static_init writes 'std::ofstream("lessons/04_ring_allreduce/lab/expected/compute.txt", std::ios::app) << "x\n"; std::ofstream("src/left_behind.cpp") << "//\n";'
with_static_init plants 'std::ofstream("src/comm/__pycache__/zz_planted.cpp") << "//\n";'
mkdir -p "$ho/.git/hooks" "$ho/src/comm/__pycache__" && printf '[core]\n' >"$ho/.git/config"
with_static_init hooks 'std::ofstream(".git/config", std::ios::app) << "\tfsmonitor = /tmp/anything\n";'
for name in deletes writes plants hooks; do
  (cd "$ho" && bash scripts/lab.sh grade 04 "$tmp/$name/ring_steps.cpp") >"$tmp/$name.out" 2>&1
  said=$(grep -m1 'the tree changed during the grade' "$tmp/$name.out")
  case $name in
    deletes) want="deleted lessons/04_ring_allreduce/lab/README.md" ;;
    writes) want="new src/left_behind.cpp; changed lessons/04_ring_allreduce/lab/expected/compute.txt" ;;
    plants) want="new src/comm/__pycache__/zz_planted.cpp" ;;  # the build would compile it into the next grade
    hooks) want="changed .git/config" ;;                       # git would run the hook it names
  esac
  if [[ $said == *"$want"* ]] && [ "$(total "$tmp/$name.out")" = "total: 0 / 10 points" ] &&
    [ "$(score "$tmp/$name/results.json")" = "0 / 10" ]; then
    ok "(3) a solution that $name in the tree: 0 / 10, ${said#*FAIL: }"
  else
    fail "(3) a solution that $name in the tree scores 0 naming it" "'$(total "$tmp/$name.out")', '$said' (want '$want')"
  fi
  git -C "$ho" checkout -q -- . 2>/dev/null || (cd "$ho" && cp "$OLDPWD/lessons/04_ring_allreduce/lab/README.md" lessons/04_ring_allreduce/lab/)
  rm -f "$ho/src/left_behind.cpp" "$ho/src/comm/__pycache__/zz_planted.cpp"
  printf '[core]\n' >"$ho/.git/config"
done
# The judge replaced (build/shardlab, which compares the curves and checks the ledgers): a script that says every
# curve matches, put in its place by a solution whose ring is wrong. The grader runs only the judge it built.
with_static_init judge 'if (std::rename("build/shardlab", "build/shardlab.real") == 0) { std::ofstream f("build/shardlab"); f << "#!/bin/sh\necho \"result: PASS\"\n"; }'
sed -i 's/return mod(r - s - 2, n);/return mod(r - s - 1, n);/' "$tmp/judge/ring_steps.cpp"  # wrong_chunk.cpp's bug
chmod -f 755 "$ho/build/shardlab" 2>/dev/null
(cd "$ho" && bash scripts/lab.sh grade 04 "$tmp/judge/ring_steps.cpp") >"$tmp/judge.out" 2>&1
[ -e "$ho/build/shardlab.real" ] && chmod 755 "$ho/build/shardlab" && mv -f "$ho/build/shardlab.real" "$ho/build/shardlab"
said=$(grep -m1 -o 'the judge (build/shardlab) changed during the grade[^)]*' "$tmp/judge.out")
if [ -n "$said" ] && [ "$(total "$tmp/judge.out")" = "total: 0 / 10 points" ]; then
  ok "(3) a solution that replaces the judge (build/shardlab): 0 / 10, '$said'"
else
  fail "(3) a solution that replaces the judge is refused" "'$(total "$tmp/judge.out")': $(grep -A1 'FAIL.*curve\|FAIL.*ledger' "$tmp/judge.out" | tr -s ' ' | tr '\n' '|' | cut -c1-300)"
fi

# ---------------------------------------------------------------- (4) Ctrl-C ends the grade
mkdir -p "$tmp/hang" && cp lessons/04_ring_allreduce/lab/controls/hang.cpp "$tmp/hang/ring_steps.cpp"
# As a terminal starts it: in a process group of its own, SIGINT not ignored (a background job's would be).
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.setpgid(0, 0); os.execvp(sys.argv[1], sys.argv[1:])' \
  bash scripts/lab.sh grade 04 "$tmp/hang/ring_steps.cpp" >"$tmp/hang.out" 2>&1 &
grader=$!
running=""
for _ in $(seq 150); do  # until the hanging check's ranks run
  running=$(grep -lz "^SHARDLAB_LAB_JOB=$LAB_JOB_PREFIX-" /proc/[0-9]*/environ 2>/dev/null | while read -r f; do
    p=${f#/proc/}; p=${p%/environ}; [ "$(cat "/proc/$p/comm" 2>/dev/null)" = shardlab ] && echo "$p"; done | head -n 1)
  [ -n "$running" ] && break
  sleep 0.2
done
sleep 1
kill -INT -- "-$grader" 2>/dev/null  # what a terminal's Ctrl-C does: SIGINT to the whole foreground group
t0=$(date +%s.%N)
for _ in $(seq 60); do kill -0 "$grader" 2>/dev/null || break; sleep 0.1; done
took=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
alive=$(kill -0 "$grader" 2>/dev/null && echo yes)
wait "$grader" 2>/dev/null
rc=$?
for _ in $(seq 20); do  # (a process killed a moment ago may still be exiting)
  left=$(grep -lz "^SHARDLAB_LAB_JOB=$LAB_JOB_PREFIX-" /proc/[0-9]*/environ 2>/dev/null | grep -v "/proc/$$/" | wc -l)
  [ "$left" = 0 ] && break
  sleep 0.1
done
if [ -n "$running" ] && [ -z "$alive" ] && [ $rc = 130 ] && [ "$left" = 0 ] && [ ! -e "$tmp/hang/results.json" ] &&
  grep -q 'lab: interrupted' "$tmp/hang.out"; then
  ok "(4) Ctrl-C during a hanging check: the grade ended in $took s (exit 130), no process left, no results written"
else
  fail "(4) Ctrl-C ends the whole grade" "ranks seen '$running', still running: '${alive:-no}' after $took s, exit $rc, $left processes left, results: $(ls "$tmp/hang" | tr '\n' ' ')"
  kill -9 -- "-$grader" 2>/dev/null
fi

# ---------------------------------------------------------------- (5) output capped
export LAB_FILE_LIMIT_KB=1024
for how in "stdout lines" "stderr lines" "stderr one line"; do
  read -r to lines <<<"$how"
  nl='\n'
  [ "$lines" = lines ] || nl=''
  with_static_init "loud_$to$lines" "std::string line(1000, 'x'); for (int i = 0; i < 60000; ++i) std::fprintf($to, \"%s$nl\", line.c_str());"
  bash scripts/lab.sh grade 04 "$tmp/loud_$to$lines/ring_steps.cpp" >"$tmp/loud.out" 2>&1
  work=$(sed -n 's/.*(build: \(.*\)\/)$/\1/p' "$tmp/loud.out" | head -n 1)
  kb=$(du -sk "$work/work" 2>/dev/null | cut -f1)
  if [ "$(total "$tmp/loud.out")" = "total: 0 / 10 points" ] && grep -q "wrote more than 1024 kB into one file" "$tmp/loud.out" &&
    [ -n "$kb" ] && [ "$kb" -lt 20000 ]; then
    ok "(5) a solution printing 60 MB to $how: 0 / 10, 'wrote more than 1024 kB into one file', the grade's files ${kb} kB"
  else
    fail "(5) a solution printing 60 MB to $how is capped" "'$(total "$tmp/loud.out")', work ${kb:-?} kB: $(grep -m2 -A1 FAIL "$tmp/loud.out" | tr -s ' ' | tr '\n' '|' | cut -c1-300)"
  fi
done
[ "$fails" = 0 ]
