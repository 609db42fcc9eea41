#!/usr/bin/env bash
# `make mutants`: do the checks catch what they claim? Realistic bugs, put into a COPY of the tree one at a
# time (never into this working tree), each built and run against the check expected to catch it: a mutant is
# caught when that check fails (and, where a diagnostic is named, says it); it survived when the check passes.
# The copy keeps this tree's build, so only the mutated file is compiled again. One line per mutant, then
# "N caught, N survived"; exits non-zero if any survived or did not build. MUTANTS="adamw_no_v_correction
# ring_receives_the_wrong_chunk" runs a subset; MUTANTS_KEEP=DIR keeps the copy there. About 5 minutes on 2 cores.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
make -s build/shardlab build/unit_tests build/mpi_tests >/dev/null || { echo "mutants: the tree does not build"; exit 1; }
work=${MUTANTS_KEEP:-$(mktemp -d)}
[ -n "${MUTANTS_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
# The working tree's files as they are (tracked, and new ones git does not ignore), and the build with its
# timestamps.
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$work"
cp -a build "$work/"
caught=0 survived=0 broken=0

# mutant NAME FILE OLD NEW CHECK [PATTERN]: replaces the one occurrence of OLD in FILE by NEW, builds, runs
# CHECK (a shell command, in the copy); caught when CHECK fails and its output matches PATTERN (if given).
mutant() {
  local name=$1 file=$2 old=$3 new=$4 check=$5 pattern=${6:-} start=$SECONDS rc verdict
  if [ -n "${MUTANTS:-}" ] && ! grep -qw -- "$name" <<<"$MUTANTS"; then return; fi
  cp -p "$work/$file" "$work/$file.orig"
  if ! python3 - "$work/$file" "$old" "$new" <<'EOF'; then
import sys
path, old, new = sys.argv[1:4]
text = open(path).read()
if text.count(old) != 1:
    print("mutants: %s: the text to change occurs %d times, not once: %r" % (path, text.count(old), old))
    sys.exit(1)
open(path, "w").write(text.replace(old, new))
EOF
    broken=$((broken + 1))
    echo "mutant $name: NOT APPLIED (the code changed: update tests/mutants.sh)"
    mv "$work/$file.orig" "$work/$file"
    return
  fi
  if ! (cd "$work" && make -s build/shardlab build/unit_tests build/mpi_tests >"$work/$name.build" 2>&1); then
    broken=$((broken + 1))
    echo "mutant $name: DOES NOT BUILD: $(grep -m1 'error' "$work/$name.build")"
  else
    (cd "$work" && timeout -k 5 600 bash -c "$check") >"$work/$name.log" 2>&1
    rc=$?
    if [ $rc != 0 ] && { [ -z "$pattern" ] || grep -Eq -- "$pattern" "$work/$name.log"; }; then
      caught=$((caught + 1))
      verdict="caught by \`$check\`: $(grep -E -m1 -- "${pattern:-FAIL|failed|error}" "$work/$name.log" | sed 's/^ *//' | cut -c1-150)"
    elif [ $rc != 0 ]; then
      survived=$((survived + 1))
      verdict="SURVIVED: \`$check\` failed (exit $rc) but without /$pattern/: $(tail -n 1 "$work/$name.log" | cut -c1-120)"
    else
      survived=$((survived + 1))
      verdict="SURVIVED: \`$check\` passed"
    fi
    echo "mutant $name ($file, $((SECONDS - start))s): $verdict"
  fi
  mv "$work/$file.orig" "$work/$file"
  touch "$work/$file"  # newer than the mutant's objects: the next build compiles it again
}

mutant adamw_no_v_correction src/optim/adamw.h \
  'const T c2 = T(1.0 / (1.0 - std::pow(p.beta2, double(step))));' 'const T c2 = T(1);' \
  'build/unit_tests "[optim]"' 'FAILED'
mutant adamw_step_minus_one src/optim/adamw.h \
  'const T c1 = T(1.0 / (1.0 - std::pow(p.beta1, double(step))));' \
  'const T c1 = T(1.0 / (1.0 - std::pow(p.beta1, double(step - 1))));' \
  'bash scripts/mpirun.sh -np 2 build/mpi_tests --use-colour no "[data_parallel]"' 'FAILED|FAIL'
mutant dropout_in_evaluation src/model/model_chunk.cpp \
  'return BlockRun{policy_, r.mb.train ? cfg_.dropout : 0.0, r.mb.drop};' 'return BlockRun{policy_, cfg_.dropout, r.mb.drop};' \
  'build/unit_tests "[model]"' 'FAILED'
mutant loss_scaled_by_micro_batch src/train/trainer.cpp \
  'const T loss_scale = T(1.0 / tokens_per_step);' 'const T loss_scale = T(1.0 / (double(cfg.micro_batch) * cfg.model.seq));' \
  'bash tests/cli/splits.sh' 'FAIL - .*(grad_norm|loss)'
mutant flash_no_rescale src/model/flash_merge.cpp \
  'Row(O + size_t(i) * ldo, HD) *= rescale;' 'Row(O + size_t(i) * ldo, HD) *= T(1);' \
  'bash lessons/08_activations/run' 'FAIL — .*flash attention differs from naive'
mutant zero3_gathers_kept_to_backward src/parallel/param_gather.cpp \
  'if (is_sharded(strategy_, Mem::param)) gathered_.erase(unit);' \
  'if (is_sharded(strategy_, Mem::param) && backward) gathered_.erase(unit);' \
  'bash lessons/06_zero/run' 'param peak .* past the bound'
mutant ring_receives_the_wrong_chunk src/comm/ring_steps.cpp \
  'reduce_scatter_recv_chunk(int r, int n, int s) { return mod(r - s - 2, n); }' \
  'reduce_scatter_recv_chunk(int r, int n, int s) { return mod(r - s - 1, n); }' \
  'SHARDLAB_COMM_TIMEOUT=10 bash scripts/mpirun.sh -np 3 build/mpi_tests --use-colour no "[ring]~[large]"' 'FAILED|deadlock'
mutant ring_receives_one_element_short src/comm/ring.cpp \
  'const size_t first = j * seg_, len = std::min(seg_, cnt_[c] - first);' \
  'const size_t first = j * seg_, len = std::min(seg_, cnt_[c] - first) - 1;' \
  'bash scripts/mpirun.sh -np 3 build/mpi_tests --use-colour no "[ring]~[large]"' "MPI failed: .*TRUNCATE.* in test case '"
mutant gelu_backward_constant src/model/gelu.h \
  '(T(1) + T(3 * 0.044715) * x.square())' '(T(1) + T(0.044715) * x.square())' \
  'build/unit_tests "[grad]"' 'FAILED'
mutant one_f_one_b_warmup_short src/parallel/stage_order.cpp \
  'const int warmup = std::min(p - s - 1, m);' 'const int warmup = std::min(p - s - 2, m);' \
  'build/unit_tests "[schedule]"' 'FAILED'
mutant tp_g_all_reduce_skipped src/parallel/megatron_fg.cpp \
  $'void reduce_from_tp_region(Communicator& tp, T* z, size_t n) {\n  tp_all_reduce(tp, z, n);' \
  $'void reduce_from_tp_region(Communicator& tp, T* z, size_t n) {\n  (void)tp, (void)z, (void)n;' \
  'bash lessons/10_tensor_parallel/run' 'FAIL'

echo "mutants: $caught caught, $survived survived$([ $broken -gt 0 ] && echo ", $broken not run (see above)")"
[ $survived = 0 ] && [ $broken = 0 ]
