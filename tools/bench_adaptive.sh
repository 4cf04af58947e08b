#!/usr/bin/env bash
# Adaptive SGD vs synchronous SGD on two CPU workers, the second EMULATED at a third of its
# speed (cpu:0,cpu:1@0.33, one thread each), on delicious and bibtex.
#
#   tools/bench_adaptive.sh HETSGD_BINARY DATASETS_DIR [OUT_DIR]
#
# DATASETS_DIR holds delicious/{train,test}.txt and bibtex/{train,test}.txt (XC format).
# Every compare races both algorithms over the same training-time budget (evaluation excluded)
# and records the time to the target P@1 on the way, so that "t@P1" and the final P@1 of one
# table come from the same runs. Runs are sequential, so other load on the machine shifts one
# algorithm's numbers and not the other's: the script repeats each compare REPS times and
# prints every table, then the medians. Environment (defaults in brackets):
#   REPS [3]  DELICIOUS_TARGET [0.62]  DELICIOUS_BUDGET [3]  BIBTEX_TARGET [0.60]
#   BIBTEX_BUDGET [1]  WEIGHT_DECAY [1e-4]  (budgets in training seconds)
# The budgets sit where sync has reached its plateau; both data sets overfit with more epochs
# (P@1 falls slowly afterwards), which a longer budget charges to the faster algorithm.
# Takes about REPS x 25 s.
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 HETSGD_BINARY DATASETS_DIR [OUT_DIR]" >&2
  exit 2
fi
bin=$1
data=$2
out=${3:-$(mktemp -d "${TMPDIR:-/tmp}/bench_adaptive.XXXXXX")}
reps=${REPS:-3}
wd=${WEIGHT_DECAY:-1e-4}
[[ -x $bin ]] || { echo "$0: $bin is not an executable" >&2; exit 2; }
for set in delicious bibtex; do
  for f in train.txt test.txt; do
    [[ -r $data/$set/$f ]] || { echo "$0: missing $data/$set/$f" >&2; exit 2; }
  done
done
mkdir -p "$out"
python=$(command -v python3 || true)

bench() {  # name target budget
  local name=$1 target=$2 budget=$3
  echo "=== $name: adaptive vs sync, devices cpu:0,cpu:1@0.33 (speeds EMULATED), target P@1" \
       "$target, budget ${budget} s training, weight decay $wd, $reps runs ==="
  for ((r = 1; r <= reps; r++)); do
    echo "--- run $r ($(uptime | sed 's/.*load average/load average/'))"
    "$bin" compare --train "$data/$name/train.txt" --test "$data/$name/test.txt" \
      --devices=cpu:0,cpu:1@0.33 --threads=1 --algos=adaptive,sync --target-p1="$target" \
      --time-budget="$budget" --weight-decay="$wd" --no-plot -q --out "$out/$name/run$r" |
      grep -v '^curves:'
  done
  if [[ -n $python ]]; then
    "$python" - "$out/$name" "$reps" "$target" <<'EOF'
import json, statistics, sys
root, reps, target = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
runs = [json.load(open(f"{root}/run{r}/summary.json"))["runs"] for r in range(1, reps + 1)]
def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None
def f(x, fmt):
    return "-" if x is None else fmt.format(x)
def field(algo, key):
    return [next((r[key] for r in rs if r["algo"] == algo and not r["error"]), None) for rs in runs]
ttt = {a: [t if t is not None and t >= 0 else None for t in field(a, "time_to_target_s")]
       for a in ("adaptive", "sync")}
ratio = [s / a if s and a else None for s, a in zip(ttt["sync"], ttt["adaptive"])]
rate = {a: field(a, "samples_per_s") for a in ("adaptive", "sync")}
rate_ratio = [a / s if a and s else None for a, s in zip(rate["adaptive"], rate["sync"])]
print(f"median of {reps} runs (speeds EMULATED): per-run t@P1 ratios sync/adaptive = "
      + ", ".join(f(x, "{:.2f}x") for x in ratio))
print(f"{'algo':9}{'t@P1>=' + format(target, '.2f'):>12}{'vs sync':>9}{'P@1':>8}{'P@3':>8}"
      f"{'P@5':>8}{'samples/s':>11}{'vs sync':>9}{'epochs':>8}  updates per device  final batch sizes")
for a in ("adaptive", "sync"):
    devs = field(a, "devices")
    last = next((d for d in reversed(devs) if d), [])
    upd = "/".join(str(int(med([d[i]["updates"] for d in devs if d]))) for i in range(len(last)))
    bs = "/".join(str(int(med([d[i]["batch_size"] for d in devs if d]))) for i in range(len(last)))
    vs = med(ratio) if a == "adaptive" else 1.0
    rr = med(rate_ratio) if a == "adaptive" else 1.0
    print(f"{a:9}{f(med(ttt[a]), '{:.2f}'):>12}{f(vs, '{:.2f}x'):>9}"
          f"{f(med(field(a, 'p1')), '{:.4f}'):>8}{f(med(field(a, 'p3')), '{:.4f}'):>8}"
          f"{f(med(field(a, 'p5')), '{:.4f}'):>8}{f(med(rate[a]), '{:.0f}'):>11}"
          f"{f(rr, '{:.2f}x'):>9}{f(med(field(a, 'epochs')), '{:.2f}'):>8}  {upd}  {bs}")
print("(t@P1: training seconds, evaluation excluded; 'vs sync' for t@P1 is the median of the "
      "per-run ratios sync/adaptive, for samples/s adaptive/sync)")
EOF
  fi
  echo
}

bench delicious "${DELICIOUS_TARGET:-0.62}" "${DELICIOUS_BUDGET:-3}"
bench bibtex "${BIBTEX_TARGET:-0.60}" "${BIBTEX_BUDGET:-1}"
echo "curves and summaries: $out"
