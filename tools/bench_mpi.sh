#!/usr/bin/env bash
# Adaptive SGD vs synchronous SGD across two MPI ranks on this machine (loopback), rank 1's
# device EMULATED at a third of its speed, on real delicious; then the same two devices in one
# process, for the merge cost per round.
#
#   tools/bench_mpi.sh HETSGD_BINARY DATASETS_DIR [OUT_DIR]
#
# DATASETS_DIR holds delicious/{train,test}.txt. Every compare races both algorithms over the
# same training-time budget (evaluation excluded) and records the time to the target P@1 on
# the way. Environment (defaults in brackets): REPS [3] TARGET [0.62] BUDGET [3] (training
# seconds) WEIGHT_DECAY [1e-4] MPIEXEC [mpirun]. As root, Open MPI also needs
# OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1. Takes about REPS x 40 s.
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 HETSGD_BINARY DATASETS_DIR [OUT_DIR]" >&2
  exit 2
fi
bin=$1
data=$2/delicious
out=${3:-$(mktemp -d "${TMPDIR:-/tmp}/bench_mpi.XXXXXX")}
reps=${REPS:-3}
target=${TARGET:-0.62}
budget=${BUDGET:-3}
wd=${WEIGHT_DECAY:-1e-4}
mpiexec=${MPIEXEC:-mpirun}
[[ -x $bin ]] || { echo "$0: $bin is not an executable" >&2; exit 2; }
for f in train.txt test.txt; do
  [[ -r $data/$f ]] || { echo "$0: missing $data/$f" >&2; exit 2; }
done
mkdir -p "$out"

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
echo "summaries: $out/{mpi,one}/run*/summary.json"
