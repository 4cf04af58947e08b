#!/usr/bin/env bash
# Two MPI ranks on this machine (loopback), rank 1's device EMULATED at a third of its speed.
#
#   tools/bench_mpi.sh HETSGD_BINARY [DATASETS_DIR [OUT_DIR]]
#
# 1. Update counts per rank (synthetic delicious-shaped data, no dataset needed): under the
#    `fixed` and `proportional` batch policies, the updates of each rank's device in round 1
#    (both at b0) and in rounds 2-4 (proportional: sized on both ranks' summed throughput),
#    side by side, with the speed ratio the run measured. Proportional should bring rounds 2-4
#    near 1 : 1 where fixed stays near the speed ratio.
# 2. With DATASETS_DIR (holding delicious/{train,test}.txt; "" skips it): Adaptive SGD against
#    synchronous SGD across the two ranks on real delicious, then the same two devices in one
#    process, for the merge cost per round. Every compare races both algorithms over the same
#    training-time budget (evaluation excluded) and records the time to the target P@1.
#
# Environment (defaults in brackets): REPS [3] TARGET [0.62] BUDGET [3] (training seconds)
# WEIGHT_DECAY [1e-4] MPIEXEC [mpirun]. As root, Open MPI also needs
# OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1. Part 1 takes about REPS x 15 s,
# part 2 about REPS x 40 s.
set -euo pipefail

if [[ $# -lt 1 ]]; then
  echo "usage: $0 HETSGD_BINARY [DATASETS_DIR [OUT_DIR]]" >&2
  exit 2
fi
bin=$1
datasets=${2:-}
out=${3:-$(mktemp -d "${TMPDIR:-/tmp}/bench_mpi.XXXXXX")}
reps=${REPS:-3}
target=${TARGET:-0.62}
budget=${BUDGET:-3}
wd=${WEIGHT_DECAY:-1e-4}
mpiexec=${MPIEXEC:-mpirun}
[[ -x $bin ]] || { echo "$0: $bin is not an executable" >&2; exit 2; }
if [[ -n $datasets ]]; then
  data=$datasets/delicious
  for f in train.txt test.txt; do
    [[ -r $data/$f ]] || { echo "$0: missing $data/$f" >&2; exit 2; }
  done
fi
mkdir -p "$out/updates"

# --- 1. update counts per rank. MPMD: one command line per rank, only --devices differs. No
# binding: on a shared machine a rank pinned to a busy core would measure its neighbour.
# b0 = 128 keeps the slow rank's proportional share above b_min = 32, so the policy, not the
# clamp, sets its count.
for policy in fixed proportional; do
  for ((r = 1; r <= reps; r++)); do
    for rounds in 1 4; do
      args=(train --synthetic=delicious --scale=0.3 --threads=1 -q --json --forest=off
            --epochs=0 --batch-policy=$policy --batch=128 --warmup-epochs=0
            --round-samples=4096 --no-eval-at-start --eval-every=100 --max-rounds=$rounds)
      echo "+ $mpiexec --bind-to none -np 1 $bin ${args[*]} --devices=cpu:0 : -np 1 ... --devices=cpu:0@0.33" >&2
      "$mpiexec" --bind-to none -np 1 "$bin" "${args[@]}" --devices=cpu:0 : \
        -np 1 "$bin" "${args[@]}" --devices=cpu:0@0.33 | grep '^{' | tail -n 1 \
        >"$out/updates/$policy.run$r.rounds$rounds.json"
    done
  done
done
python3 - "$out/updates" "$reps" <<'PY'
import json, statistics, sys
out, reps = sys.argv[1], int(sys.argv[2])
med = statistics.median
print(f"update counts per rank: rank 0 cpu:0, rank 1 cpu:0@0.33 (EMULATED), S = 4096, b0 = 128, "
      f"medians of {reps}")
print("| policy | round 1: rank 0 / rank 1 | rounds 2-4: rank 0 / rank 1 | ratio rounds 2-4 "
      "| measured speed ratio | final batch sizes |")
print("|---|---|---|---|---|---|")
for policy in ("fixed", "proportional"):
    one, rest, speed, ratio, sizes = [], [], [], [], []
    for r in range(1, reps + 1):
        a = json.load(open(f"{out}/{policy}.run{r}.rounds1.json"))["devices"]
        b = json.load(open(f"{out}/{policy}.run{r}.rounds4.json"))["devices"]
        n1 = [d["updates"] for d in a]
        n4 = [b[i]["updates"] - n1[i] for i in range(2)]
        one.append(n1)
        rest.append(n4)
        ratio.append(n4[0] / max(1, n4[1]))
        rate = [d["samples"] / d["busy_s"] for d in b]
        speed.append(rate[0] / rate[1])
        sizes.append([d["batch_size"] for d in b])
    col = lambda rows, i: med([x[i] for x in rows])
    print(f"| {policy} | {col(one, 0):g} / {col(one, 1):g} | {col(rest, 0):g} / {col(rest, 1):g} "
          f"| {med(ratio):.2f} | {med(speed):.2f} | {col(sizes, 0):g} / {col(sizes, 1):g} |")
PY
[[ -n $datasets ]] || { echo "records: $out/updates/*.json"; exit 0; }

# --- 2. adaptive against sync on real delicious.
common=(compare --train "$data/train.txt" --test "$data/test.txt" --threads=1
        --algos=adaptive,sync --target-p1="$target" --time-budget="$budget"
        --weight-decay="$wd" --no-plot -q)
for ((r = 1; r <= reps; r++)); do
  echo "--- run $r ($(uptime | sed 's/.*load average/load average/'))"
  # MPMD: one command line per rank; only --devices differs. No binding: the in-process run's
  # two threads may use either core, and on a shared machine a rank pinned to a busy core
  # would measure its neighbour.
  "$mpiexec" --bind-to none -np 1 "$bin" "${common[@]}" --out "$out/mpi/run$r" --devices=cpu:0 : \
    -np 1 "$bin" "${common[@]}" --out "$out/mpi/run$r" --devices=cpu:0@0.33 >/dev/null
  "$bin" "${common[@]}" --out "$out/one/run$r" --devices=cpu:0,cpu:1@0.33 >/dev/null
done

python3 - "$out" "$reps" "$target" <<'PY'
import json, statistics, sys
out, reps, target = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
rows = {}
for setup in ("mpi", "one"):
    for r in range(1, reps + 1):
        s = json.load(open(f"{out}/{setup}/run{r}/summary.json"))
        for run in s["runs"]:
            if run.get("error"):
                raise SystemExit(f"{setup} run {r} {run['algo']}: {run['error']}")
            rows.setdefault((setup, run["algo"]), []).append(run)
med = statistics.median
print(f"delicious, target P@1 {target}, devices cpu:0 + cpu:0@0.33 (EMULATED), medians of {reps}")
print("| setup | algo | time to target | final P@1 | samples/s | rounds | merge per round | updates rank 0 / rank 1 |")
print("|---|---|---|---|---|---|---|---|")
for (setup, algo), runs in rows.items():
    ttt = [x["time_to_target_s"] for x in runs]
    reached = [t for t in ttt if t >= 0]
    ttt_s = f"{med(reached):.2f} s" if len(reached) == len(ttt) else f"{len(reached)}/{len(ttt)} reached"
    per_round = med([x["merge_time_s"] / max(1, x["rounds"]) * 1e3 for x in runs])
    ups = " / ".join(str(int(med([x["devices"][i]["updates"] for x in runs])))
                     for i in range(len(runs[0]["devices"])))
    name = "2 ranks (MPI)" if setup == "mpi" else "1 process"
    print(f"| {name} | {algo} | {ttt_s} | {med([x['p1'] for x in runs]):.4f} | "
          f"{med([x['samples_per_s'] for x in runs]):.0f} | {med([x['rounds'] for x in runs]):.0f} | "
          f"{per_round:.2f} ms | {ups} |")
PY
echo "records: $out/updates/*.json; summaries: $out/{mpi,one}/run*/summary.json"
