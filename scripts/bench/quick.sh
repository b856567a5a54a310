#!/usr/bin/env bash
# The performance regression check to run before a change that touches the training step lands
# (`make bench-quick`; timing is not a test, so it is not in `make test`). Two short side-by-side
# cases against PyTorch eager, alternating rounds, the median ratio of each:
#   resnet   run_resnet resnet18 bs 16 at 224 px, fp32   vs torchvision eager  (resnet_bench.sh)
#   gpt      run_gpt gpt_tiny batch 16 x seq 64, fp32     vs the same in eager   (gpt_e2e.sh)
# A ratio below 1.0 means run_<model> is slower than the PyTorch a user already has. Figures
# taken while the machine is busy mean nothing: the script prints the load before and after.
#
#   scripts/bench/quick.sh            ROUNDS=3 (alternating pairs per case), THREADS=nproc
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
rounds="${ROUNDS:-3}"
export THREADS="${THREADS:-$(nproc)}"
py="$root/.venv/bin/python"
median() { "$py" -c 'import statistics, sys; print(f"{statistics.median(float(x) for x in sys.argv[1:]):.3f}")' "$@"; }

echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) cores, threads $THREADS; load before: $(cut -d' ' -f1-3 /proc/loadavg)"

resnet=()
for r in $(seq "$rounds"); do
    line=$("$root/scripts/bench/resnet_bench.sh" resnet18 16 5 | grep '^ratio run_resnet')
    echo "resnet round $r: $line"
    resnet+=("$(echo "$line" | sed -n 's/^ratio run_resnet \/ pytorch = \([0-9.]*\).*/\1/p')")
done

gpt=()
while IFS= read -r line; do
    echo "gpt $line"
    case "$line" in
        *"A: run_gpt tokens/s "*) ours=$(echo "$line" | sed -n 's/.*run_gpt tokens\/s \([0-9.]*\).*/\1/p') ;;
        *"B: pytorch tokens/s "*)
            ref=$(echo "$line" | sed -n 's/.*pytorch tokens\/s \([0-9.]*\).*/\1/p')
            gpt+=("$("$py" -c 'import sys; print(float(sys.argv[1]) / float(sys.argv[2]))' "$ours" "$ref")") ;;
    esac
done < <(ROUNDS="$rounds" OMP_NUM_THREADS="$THREADS" THREADS="$THREADS" "$root/scripts/bench/gpt_e2e.sh" tiny | grep 'round')

echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "run_resnet / pytorch (resnet18 bs16, fp32): median $(median "${resnet[@]}") of ${resnet[*]}"
echo "run_gpt / pytorch (gpt_tiny, fp32):         median $(median "${gpt[@]}") of ${gpt[*]}"
