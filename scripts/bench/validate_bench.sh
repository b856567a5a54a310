#!/usr/bin/env bash
# Benchmark: `modelzoo validate --all` over a generated tree of N (default 1000) Python model
# directories in ModelZoo layout (PyTorch/contrib/<category>/<model>, one model.yaml), built in
# a temp dir at bench time. Not part of `make test`. Rounds alternate the default run (layout
# and review rules) and `--layout-only`, so the review's cost is measured side by side.
#
# usage: scripts/bench/validate_bench.sh [N]
set -euo pipefail
cd "$(dirname "$0")/../.."
n="${1:-1000}"
bin=target/release/modelzoo
[[ -x $bin ]] || { echo "build first: make build (or cargo build --release -p modelzoo-cli)" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 - "$work" "$n" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
contrib = os.path.join(root, "PyTorch", "contrib")
readme = "## 1. 模型概述\n## 2.1 准备数据集\n## 2.2 构建环境\n## 2.3 启动训练\n## 2.4 训练结果\n" + "text\n" * 200
entries = []
for i in range(n):
    cat = f"Category{i % 20}"
    d = os.path.join(contrib, cat, f"Model{i}")
    os.makedirs(os.path.join(d, "run_scripts"))
    w = lambda p, t: open(os.path.join(d, p), "w").write(t)
    w("README.md", readme)
    w("requirements.txt", "numpy\nscipy\n" + ("torch\n" if i % 10 == 0 else ""))
    w(f"run_scripts/run_model{i}.py", "import argument\n" * 50)
    w("run_scripts/argument.py", "p.add_argument('--step', type=int)\np.add_argument('--nproc_per_node')\n")
    w("run_scripts/formate_cmd.py", "\n")
    w("run_scripts/README.md", "model_name batch_size epoch step dataset_path lr device autocast nproc_per_node\n")
    if i % 2 == 0:
        entries.append(f"  - name: model{i}\n    path: contrib/{cat}/Model{i}\n    framework: pytorch\n    category: {cat}\n    devices: [sdaa]\n    command: python run_scripts/run_model{i}.py --step 5\n    log: \"{{output_dir}}/out.log\"\n    metrics: [train.loss]\n    timeout: 60\n")
os.makedirs(os.path.join(root, "PyTorch", "model_config"))
open(os.path.join(root, "PyTorch", "model_config", "model.yaml"), "w").write("models:\n" + "".join(entries))
PY
echo "machine: $(lscpu | grep 'Model name' | sed 's/ \+/ /g'), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin" validate --all "$work/PyTorch/contrib" > /dev/null || true   # warm the page cache
for run in 1 2 3; do
    /usr/bin/time -f "run $run, review: wall %e s  user %U s  sys %S s  max RSS %M KB" \
        "$bin" validate --all "$work/PyTorch/contrib" > "$work/out.txt" || true
    /usr/bin/time -f "run $run, --layout-only: wall %e s  user %U s  sys %S s  max RSS %M KB" \
        "$bin" validate --layout-only --all "$work/PyTorch/contrib" > "$work/layout.txt" || true
done
echo "review: $(tail -n 1 "$work/out.txt")"
echo "--layout-only: $(tail -n 1 "$work/layout.txt")"
