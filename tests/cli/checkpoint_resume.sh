#!/usr/bin/env bash
# Checkpoints and resume, end to end through the CLI:
#  (a) 12 straight steps (A) versus 8 steps, save, resume to 12 (B): bit-identical loss curves
#      (compare --rtol 0), and B/loss.csv holds steps 1..12 once each; for f32 with dropout, f64,
#      --mixed bf16 with AdamW, and SGD+momentum. The schedule is constant after a 4-step warmup
#      so that the learning rate does not depend on --steps (cosine decay would, by design).
#  (b) the checkpoint directory: latest, step_000004/8/12, meta.json with format_version, step,
#      config and a sha256 per file that matches the file.
#  (c) leftovers of an interrupted save don't stop a resume, are cleared by the next save, and
#      look-alike files a person made are never touched.
#  (d) eval of a checkpoint (DIR and DIR/step_NNNNNN); (e) sample, deterministic per seed.
#  (f) model.safetensors is well formed (shapes × dtype sizes = byte ranges, expected names).
#  (g) a copied checkpoint directory resumes into itself and leaves the original alone.
#  (h) sharded layouts with uneven shards (Ψ over 3 ranks): ZeRO-3 resumed bit for bit on its layout; in the exact
#      mode a run handed from layout to layout (ZeRO-3/2/1 over 3, tp, pp, FSDP hybrid) equals one process.
# Prints one `ok - ...` / `FAIL - ... (why)` line per check; exits 0 iff all pass.
source "$(dirname "$0")/lib.sh"

M=(--layers 1 --hidden 32 --heads 2 --seq 32 --micro-batch 2 --global-batch 2 --eval-windows 4 --progress none
   --data "$tmp/small.txt" --lr-schedule constant --warmup 4)

PY=""
command -v python3 >/dev/null 2>&1 && python3 -c "import json, struct" >/dev/null 2>&1 && PY=python3

# ---------------------------------------------------------------- (a) bit-identical resume
resume_case() {  # resume_case NAME FLAGS...
  local name=$1 d=$tmp/$1
  shift
  mkdir -p "$d"
  if ! "$S" train "${M[@]}" "$@" --steps 12 --save "$d/ckA" --save-every 4 --out "$d/A" >"$d/logA" 2>&1; then
    fail "$name: run A (12 steps, --save-every 4)" "$(last "$d/logA")"; return
  fi
  if ! "$S" train "${M[@]}" "$@" --steps 8 --save "$d/ckB" --out "$d/B" >"$d/logB" 2>&1; then
    fail "$name: run B (8 steps, --save)" "$(last "$d/logB")"; return
  fi
  if ! "$S" train "${M[@]}" "$@" --resume "$d/ckB" --steps 12 --out "$d/B" >"$d/logB2" 2>&1; then
    fail "$name: run B resumed to 12 steps" "$(last "$d/logB2")"; return
  fi
  if "$S" compare "$d/A" "$d/B" --rtol 0 >"$d/cmp" 2>&1; then
    ok "$name: resumed run is bit-identical to the straight run (compare --rtol 0)"
  else
    fail "$name: resumed run is bit-identical to the straight run (compare --rtol 0)" "$(grep -E 'max rel|error' "$d/cmp" | head -n 1)"
  fi
  local steps
  steps=$(tail -n +2 "$d/B/loss.csv" | cut -d, -f1 | tr '\n' ' ')
  if [ "$steps" = "$(seq 1 12 | tr '\n' ' ')" ]; then
    ok "$name: B/loss.csv has exactly steps 1..12"
  else
    fail "$name: B/loss.csv has exactly steps 1..12" "steps: $steps"
  fi
  # step, loss, grad_norm and lr columns byte-identical too (ms is timing; val_loss is evaluated
  # at the end of each invocation, so B has one at step 8 and A does not).
  if diff <(cut -d, -f1-4 "$d/A/loss.csv") <(cut -d, -f1-4 "$d/B/loss.csv") >/dev/null; then
    ok "$name: loss, grad_norm and lr columns identical in A and B"
  else
    fail "$name: loss, grad_norm and lr columns identical in A and B" \
      "$(diff <(cut -d, -f1-4 "$d/A/loss.csv") <(cut -d, -f1-4 "$d/B/loss.csv") | grep '^[<>]' | head -n 2 | tr '\n' '|')"
  fi
}
resume_case f32_dropout --dropout 0.1
resume_case f64 --dtype f64
resume_case bf16_adamw --mixed bf16 --optimizer adamw
resume_case sgd --optimizer sgd

CK=$tmp/f32_dropout/ckA

# ---------------------------------------------------------------- (b) checkpoint directory
latest=$(cat "$CK/latest" 2>/dev/null)
if [ "$latest" = step_000012 ]; then ok "(b) ckA/latest names step_000012"; else fail "(b) ckA/latest names step_000012" "latest: '$latest'"; fi
for s in 4 8 12; do
  sd=$CK/$(printf 'step_%06d' "$s")
  name="(b) $(basename "$sd"): meta.json with format_version, step $s, config and matching sha256 per file"
  if [ ! -f "$sd/meta.json" ]; then fail "$name" "no $sd/meta.json"; continue; fi
  # Without python3 too: the keys, and each file's sha256sum, must appear in meta.json.
  why=""
  grep -Eq '"format_version": [0-9]+' "$sd/meta.json" || why+="no format_version; "
  grep -Eq "^  \"step\": $s,?\$" "$sd/meta.json" || why+="no top-level \"step\": $s; "
  grep -q '"config": {' "$sd/meta.json" || why+="no config; "
  for f in "$sd"/*.safetensors; do
    h=$(sha256sum "$f" | cut -d' ' -f1)
    grep -q "\"sha256\": \"$h\"" "$sd/meta.json" || why+="sha256sum of $(basename "$f") not in meta.json; "
  done
  # With python3: parse it; every file is listed, with its size and hash.
  if [ -n "$PY" ] && ! out=$($PY - "$sd" "$s" 2>&1 <<'EOF'
import hashlib, json, os, sys
d, step = sys.argv[1], int(sys.argv[2])
m = json.load(open(os.path.join(d, "meta.json")))
bad = []
if not isinstance(m.get("format_version"), int): bad.append("no integer format_version")
if m.get("step") != step: bad.append("step is %r" % m.get("step"))
c = m.get("config")
if not isinstance(c, dict) or c.get("hidden") != 32 or c.get("layers") != 1: bad.append("config missing or wrong")
files = m.get("files") or {}
on_disk = sorted(f for f in os.listdir(d) if f != "meta.json")
if sorted(files) != on_disk: bad.append("files listed %s, on disk %s" % (sorted(files), on_disk))
for f, info in files.items():
    p = os.path.join(d, f)
    if not os.path.isfile(p): bad.append(f + " missing"); continue
    data = open(p, "rb").read()
    if hashlib.sha256(data).hexdigest() != info.get("sha256"): bad.append(f + " sha256 mismatch")
    if len(data) != info.get("bytes"): bad.append(f + " size mismatch")
print("; ".join(bad)); sys.exit(1 if bad else 0)
EOF
  ); then why+="$out"; fi
  if [ -z "$why" ]; then ok "$name"; else fail "$name" "${why%; }"; fi
done

# ---------------------------------------------------------------- (d) eval
num_re='^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$'
eval_loss() { "$S" eval --load "$1" --data "$tmp/small.txt" 2>&1 | awk '/^mean loss/ {print $3}'; }
l12=$(eval_loss "$CK")
if [[ "$l12" =~ $num_re ]] && awk -v x="$l12" 'BEGIN { exit !(x < 5.545) }'; then
  ok "(d) eval --load ckA: finite mean loss $l12 < ln(256)"
else
  fail "(d) eval --load ckA: finite mean loss < ln(256)" "got '$l12': $("$S" eval --load "$CK" --data "$tmp/small.txt" 2>&1 | tail -n 1)"
fi
l4=$(eval_loss "$CK/step_000004")
if [[ "$l4" =~ $num_re ]] && [ "$l4" != "$l12" ]; then
  ok "(d) eval --load ckA/step_000004: finite mean loss $l4 (not the step-12 value)"
else
  fail "(d) eval --load ckA/step_000004: finite mean loss (not the step-12 value)" "got '$l4', step 12 gave '$l12'"
fi

# ---------------------------------------------------------------- (e) sample
smp() { "$S" sample --load "$CK" --prompt "Note 1" --tokens 40 "$@"; }
smp --seed 7 >"$tmp/s1" 2>"$tmp/s1.err"
rc=$?
n=$(wc -c <"$tmp/s1")
if [ "$rc" = 0 ] && [ "$(head -c 6 "$tmp/s1")" = "Note 1" ] && [ "$n" -ge 46 ]; then
  ok "(e) sample --tokens 40 prints the prompt and $((n - 6)) bytes after it"
else
  fail "(e) sample --tokens 40 prints the prompt and >= 40 bytes after it" "exit $rc, $n bytes, $(head -c 200 "$tmp/s1.err")"
fi
smp --seed 7 >"$tmp/s2" 2>/dev/null
smp --seed 8 >"$tmp/s3" 2>/dev/null
if cmp -s "$tmp/s1" "$tmp/s2"; then ok "(e) sample: same seed, same text"; else fail "(e) sample: same seed, same text" "outputs differ"; fi
if ! cmp -s "$tmp/s1" "$tmp/s3"; then ok "(e) sample: another seed, other text"; else fail "(e) sample: another seed, other text" "identical"; fi

# ---------------------------------------------------------------- (f) safetensors layout
if [ -z "$PY" ]; then
  fail "(f) safetensors layout" "no python3 (make deps installs it)"
else
  for v in f32_dropout:F32 f64:F64 bf16_adamw:BF16; do
    f=$tmp/${v%%:*}/ckA/step_000012/model.safetensors
    name="(f) ${v%%:*} model.safetensors: ${v#*:} tensors, shape × dtype size = byte range, expected names"
    if out=$($PY - "$f" "${v#*:}" 2>&1 <<'EOF'
import json, struct, sys
path, want_dtype = sys.argv[1], sys.argv[2]
size = {"F64": 8, "F32": 4, "BF16": 2, "F16": 2, "I64": 8, "I32": 4, "U8": 1}
bad = []
try:  # the real library, when installed, must accept the file
    from safetensors.numpy import load_file
    load_file(path)
except ImportError:
    pass
except Exception as e:
    bad.append("safetensors refuses it: %s" % e)
b = open(path, "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n].decode("utf-8"))
data_len = len(b) - 8 - n
spans = []
for name, t in h.items():
    if name == "__metadata__": continue
    if t["dtype"] != want_dtype: bad.append("%s is %s" % (name, t["dtype"]))
    count = 1
    for s in t["shape"]: count *= s
    lo, hi = t["data_offsets"]
    if count * size.get(t["dtype"], 0) != hi - lo: bad.append("%s: %s x %s != %d bytes" % (name, t["shape"], t["dtype"], hi - lo))
    spans.append((lo, hi))
spans.sort()
pos = 0
for lo, hi in spans:
    if lo != pos: bad.append("gap or overlap at byte %d" % lo); break
    pos = hi
if pos != data_len: bad.append("tensors cover %d of %d data bytes" % (pos, data_len))
for want in ["tok_emb", "pos_emb", "blocks.0.attn.qkv.weight", "ln_f.weight", "lm_head.weight"]:
    if want not in h: bad.append("no tensor " + want)
print("; ".join(bad[:4])); sys.exit(1 if bad else 0)
EOF
    ); then ok "$name"; else fail "$name" "$out"; fi
  done
  # docs/checkpoint_format.md describes what is really there: meta.json's keys (its table), and
  # optimizer.safetensors as master.*, then adam_m.*, then adam_v.*, each in the parameter order.
  step=$tmp/bf16_adamw/ckA/step_000012
  name="(f) docs/checkpoint_format.md: meta.json keys and optimizer.safetensors order match a real bf16 checkpoint"
  if out=$($PY - docs/checkpoint_format.md "$step" 2>&1 <<'EOF'
import json, re, struct, sys
doc, step = open(sys.argv[1]).read(), sys.argv[2]
section = doc.split("## `meta.json`")[1].split("```")[0]
documented = set(re.findall(r"^\| `([a-z_]+)`", section, re.M))
meta = json.load(open(step + "/meta.json"))
bad = []
if documented != set(meta): bad.append("documented keys %s, real keys %s" % (sorted(documented), sorted(meta)))
def names(path):
    b = open(path, "rb").read(); n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n]); h.pop("__metadata__", None)
    return [k for k, _ in sorted(h.items(), key=lambda kv: kv[1]["data_offsets"][0])]
params = names(step + "/model.safetensors")
want = [k + "." + p for k in ("master", "adam_m", "adam_v") for p in params]
got = names(step + "/optimizer.safetensors")
if got != want: bad.append("optimizer.safetensors order %s..., documented %s..." % (got[:3], want[:3]))
print("; ".join(bad)); sys.exit(1 if bad else 0)
EOF
  ); then ok "$name"; else fail "$name" "$out"; fi
fi

# ---------------------------------------------------------------- (c) leftovers of an interrupted save
# Scratch of a killed save (unique names) is cleared by the next save; look-alikes a person made
# (step_000016.tmp/, latest.tmp) are never touched and never in the way.
mkdir -p "$CK/step_000016.tmp-k1Ll3d" "$CK/step_000014.tmp-Xy12ab" "$CK/step_000016.tmp" "$CK/step_000014.tmp"
head -c 1000 /dev/urandom >"$CK/step_000016.tmp-k1Ll3d/model.safetensors"
echo '{"half": ' >"$CK/step_000014.tmp-Xy12ab/meta.json"
printf 'step_000016\n' >"$CK/latest.tmp-Qq9zZ0"
echo mine >"$CK/step_000014.tmp/notes.txt"
head -c 1000 /dev/urandom >"$CK/step_000016.tmp/model.safetensors"
printf 'garbage\0\377 not a step\n' >"$CK/latest.tmp"
name="(c) leftovers of a killed save and look-alike user files don't prevent --resume ckA --steps 14"
if "$S" train --resume "$CK" --steps 14 --save "$CK" --out "$tmp/C" --progress none >"$tmp/logC" 2>&1 &&
   [ "$(cat "$CK/latest")" = step_000014 ] &&
   [ "$(tail -n +2 "$tmp/C/loss.csv" | cut -d, -f1 | tr '\n' ' ')" = "13 14 " ]; then
  ok "$name"
else
  fail "$name" "$(last "$tmp/logC") latest: $(cat "$CK/latest" 2>/dev/null)"
fi
name="(c) the save cleared its own scratch and left the user's look-alikes as they were"
if [ ! -e "$CK/step_000016.tmp-k1Ll3d" ] && [ ! -e "$CK/step_000014.tmp-Xy12ab" ] && [ ! -e "$CK/latest.tmp-Qq9zZ0" ] &&
   [ "$(cat "$CK/step_000014.tmp/notes.txt")" = mine ] && [ -s "$CK/step_000016.tmp/model.safetensors" ] &&
   [ -e "$CK/latest.tmp" ]; then
  ok "$name"
else
  fail "$name" "$(ls -a "$CK" | tr '\n' ' ')"
fi
if "$S" eval --load "$CK" --data "$tmp/small.txt" >/dev/null 2>&1; then
  ok "(c) the checkpoint saved next to the leftovers loads (eval)"
else
  fail "(c) the checkpoint saved next to the leftovers loads (eval)" "$("$S" eval --load "$CK" --data "$tmp/small.txt" 2>&1 | tail -n 1)"
fi

# ---------------------------------------------------------------- (g) a copied checkpoint directory
orig=$tmp/sgd/ckB
cp -r "$orig" "$tmp/ck_copy"
before=$(cd "$orig" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
if "$S" train --resume "$tmp/ck_copy" --steps 14 --save "$tmp/ck_copy" --out "$tmp/G" --progress none >"$tmp/logG" 2>&1 &&
   [ "$(cat "$tmp/ck_copy/latest")" = step_000014 ] &&
   [ "$before" = "$(cd "$orig" && find . -type f -print0 | sort -z | xargs -0 sha256sum)" ]; then
  ok "(g) --resume of a copied checkpoint directory saves into the copy and leaves the original alone"
else
  fail "(g) --resume of a copied checkpoint directory saves into the copy and leaves the original alone" \
    "$(last "$tmp/logG") copy latest: $(cat "$tmp/ck_copy/latest" 2>/dev/null)"
fi

# ---------------------------------------------------------------- (h) sharded layouts with uneven shards
# Ψ = 42,880 is not a multiple of 3: over 3 ranks the shards are 14,294 elements, the last one padded, and every
# shard's offset in the whole tensors counts. (1) ZeRO-3 on 3 ranks: 4 straight steps against 2, save, resume to 4 on the same layout — bit for bit.
# (2) In the exact mode every layout computes the single process's bits, so a run handed on from layout to layout —
# each resuming the one before's checkpoint — must equal one process's 7 steps bit for bit: ZeRO-3, ZeRO-2 and ZeRO-1
# over 3 ranks (uneven), dp 2 × tp 2 (tp slices), dp 2 × pp 2 (stages), FSDP hybrid over 2 nodes of 2, one process.
H=(--layers 2 --hidden 32 --heads 2 --seq 32 --micro-batch 1 --global-batch 12 --eval-windows 0 --progress none
   --data "$tmp/small.txt" --lr-schedule constant --warmup 2 --dtype f64)
mpi() { local n=$1; shift; timeout 120 bash scripts/mpirun.sh -np "$n" "$S" train "${H[@]}" "$@" </dev/null; }
if mpi 3 --zero 3 --steps 4 --out "$tmp/h/A" >"$tmp/h.log" 2>&1 && mpi 3 --zero 3 --steps 2 --save "$tmp/h/ck" \
  --out "$tmp/h/B" >>"$tmp/h.log" 2>&1 && mpi 3 --zero 3 --resume "$tmp/h/ck" --steps 4 --out "$tmp/h/B" >>"$tmp/h.log" 2>&1 &&
  "$S" compare "$tmp/h/A" "$tmp/h/B" --rtol 0 >"$tmp/h.cmp" 2>&1; then
  ok "(h) ZeRO-3 over 3 ranks, uneven shards: saved at step 2 and resumed, bit-identical to 4 straight steps"
else
  fail "(h) ZeRO-3 over 3 ranks resumed bit for bit" "$(last "$tmp/h.log") $(grep -E 'max rel|error' "$tmp/h.cmp" | head -n 1)"
fi
"$S" train "${H[@]}" --exact --steps 7 --out "$tmp/h/one" >"$tmp/h1.log" 2>&1 || fail "setup: one process, exact, 7 steps" "$(last "$tmp/h1.log")"
step=0 handed=""
for hop in "3 --zero 3" "3 --zero 2" "3 --zero 1" "4 --dp 2 --tp 2 --zero 1" "4 --dp 2 --pp 2 --zero 1" \
  "4 --fsdp hybrid --ranks-per-node 2" "1"; do
  read -r -a a <<<"$hop"
  from=()
  [ $step -gt 0 ] && from=(--resume "$tmp/h/chain")
  step=$((step + 1))
  if [ "${a[0]}" = 1 ]; then run=("$S" train "${H[@]}"); else run=(bash scripts/mpirun.sh -np "${a[@]:0:1}" "$S" train "${H[@]}" "${a[@]:1}"); fi
  if ! timeout 120 "${run[@]}" ${from[@]+"${from[@]}"} --exact --steps $step --save "$tmp/h/chain" --out "$tmp/h/chained" \
    >"$tmp/h2.log" 2>&1 </dev/null; then
    fail "(h) the exact run handed on: step $step on ${a[*]:1}" "$(last "$tmp/h2.log")"
    break
  fi
  handed+="${handed:+ → }${a[*]:1}"
done
if [ $step = 7 ] && "$S" compare "$tmp/h/one" "$tmp/h/chained" --rtol 0 >"$tmp/h2.cmp" 2>&1; then
  ok "(h) exact, one step per layout, each resuming the last's checkpoint (${handed% → }, one process): bit-identical to one process"
else
  fail "(h) the exact run handed from layout to layout equals one process" "$(grep -E 'max rel|error|FAIL' "$tmp/h2.cmp" | head -n 2)"
fi

[ "$fails" = 0 ]
