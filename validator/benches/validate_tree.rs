//! `Validator::check_tree` over a generated ModelZoo tree of 1,000 Python model directories
//! (the `## validate` target in docs/benchmarks.md: ≤ 1 s). The tree is built in a temp dir at
//! bench time; the library is measured without the `modelzoo` binary's start-up.

use std::fs;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use validator::layout::{Options, Validator};

const README: &str =
    "## 1. 模型概述\n## 2.1 准备数据集\n## 2.2 构建环境\n## 2.3 启动训练\n## 2.4 训练结果\n";

fn build_tree(root: &Path, n: usize) {
    let mut yaml = String::from("models:\n");
    for i in 0..n {
        let cat = format!("Category{}", i % 20);
        let d = root
            .join("PyTorch/contrib")
            .join(&cat)
            .join(format!("Model{i}"));
        fs::create_dir_all(d.join("run_scripts")).unwrap();
        fs::write(
            d.join("README.md"),
            README.to_string() + &"text\n".repeat(200),
        )
        .unwrap();
        let req = if i % 10 == 0 {
            "numpy\ntorch\n"
        } else {
            "numpy\n"
        };
        fs::write(d.join("requirements.txt"), req).unwrap();
        fs::write(
            d.join(format!("run_scripts/run_model{i}.py")),
            "import argument\n".repeat(50),
        )
        .unwrap();
        fs::write(
            d.join("run_scripts/argument.py"),
            "p.add_argument('--step', type=int)\np.add_argument('--nproc_per_node')\n",
        )
        .unwrap();
        fs::write(d.join("run_scripts/formate_cmd.py"), "\n").unwrap();
        fs::write(
            d.join("run_scripts/README.md"),
            "model_name batch_size epoch step dataset_path lr device autocast nproc_per_node\n",
        )
        .unwrap();
        if i % 2 == 0 {
            yaml.push_str(&format!(
                "  - name: model{i}\n    path: contrib/{cat}/Model{i}\n    framework: pytorch\n    category: {cat}\n    devices: [sdaa]\n    command: python run_scripts/run_model{i}.py --step 5\n    log: \"{{output_dir}}/out.log\"\n    metrics: [train.loss]\n    timeout: 60\n"
            ));
        }
    }
    fs::create_dir_all(root.join("PyTorch/model_config")).unwrap();
    fs::write(root.join("PyTorch/model_config/model.yaml"), yaml).unwrap();
}

fn bench(c: &mut Criterion) {
    let tmp = tempfile::tempdir().unwrap();
    build_tree(tmp.path(), 1000);
    let contrib = tmp.path().join("PyTorch/contrib");
    c.bench_function("validate --all, 1000 model dirs", |b| {
        b.iter(|| {
            let reports = Validator::new(&Options::default())
                .unwrap()
                .check_tree(&contrib)
                .unwrap();
            assert_eq!(reports.len(), 1000);
            reports
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
