//! The review tests' fixtures: a complete, consistent Python model directory in the public
//! ModelZoo's shape, its logs and the checks run on it (shared by review.rs and
//! review_gaps.rs).
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};

use validator::layout::{DirReport, Options, Validator};

pub fn write(path: &Path, text: impl AsRef<[u8]>) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

pub const BANNER: &str = "--------------+------------------------------------------------\n Host IP      | 127.0.1.1\n PyTorch      | 2.4.0a0+git4451b0e\n Torch-SDAA   | 2.1.1b0+gitebfa9da\n--------------+------------------------------------------------\n";

/// A tcap_dllogger stdout log of rank 0's train.loss.
pub fn tcap_log(values: &[f64]) -> String {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            format!("TCAPPDLL 2025-05-15 14:20:10.948668 - Epoch: 0 Iteration: {i}  rank : 0  train.loss : {v}  train.ips : 30671.3 imgs/s\n")
        })
        .collect()
}

pub fn cuda_values() -> Vec<f64> {
    (0..20).map(|i| 2.0 - 0.05 * i as f64).collect()
}

/// SDAA values: CUDA's scaled by `factor`.
pub fn sdaa_values(factor: f64) -> Vec<f64> {
    cuda_values().iter().map(|v| v * factor).collect()
}

/// loss.py's figures on the two series, as Python prints them.
pub fn figures(cuda: &[f64], sdaa: &[f64]) -> (f64, f64) {
    let n = cuda.len().min(sdaa.len());
    let (mut rel, mut diff) = (0.0, 0.0);
    for i in 0..n {
        rel += (sdaa[i] - cuda[i]) / cuda[i];
        diff += sdaa[i] - cuda[i];
    }
    (rel / n as f64, diff / n as f64)
}

pub fn results_text(mre: f64, mae: f64) -> String {
    let verdict = if mre <= 0.05 || mae <= 0.0002 {
        "pass"
    } else {
        "fail"
    };
    format!("MeanRelativeError: {mre}\nMeanAbsoluteError: {mae}\nRule,mean_relative_error {mre}\n{verdict} mean_relative_error={mre} <= 0.05 or mean_absolute_error={mae} <= 0.0002\n")
}

pub fn readme(model: &str, results: &str) -> String {
    format!(
        "# {model}\n## 1. 模型概述\n{model} is a demo.\n## 2. 快速开始\n### 2.1 准备数据集\nSynthetic data.\n### 2.2 构建环境\n```\npip install -r requirements.txt\n```\n### 2.3 启动训练\n1. 进入训练脚本所在目录。\n```\ncd <ModelZoo_path>/PyTorch/contrib/Classification/{model}/run_scripts\n```\n2. 运行训练。该模型支持单机四卡。\n```\npython run_demo.py --nproc_per_node 4 --model_name demo --epoch 1 --batch_size 32 --device sdaa\n```\n### 2.4 训练结果\n| 加速卡数量 | epoch | AMP |\n|---|---|---|\n| 4 | 1 | yes |\n\n![loss](./run_scripts/loss.jpg)\n\n{results}"
    )
}

pub const TEST_SH: &str = "#!/bin/bash\nscript_path=$(dirname $(readlink -f \"$0\"))\necho $script_path\ncd $script_path\npip3 install -r ../requirements.txt\npython run_demo.py --nproc_per_node 4 --model_name demo --epoch 1 \\\n    --batch_size 32 --device sdaa 2>&1 | tee sdaa.log\n\n# loss curves\npython loss.py --sdaa-log sdaa.log --cuda-log cuda.log\n";

pub const LOSS_PY: &str = "import re\nimport numpy as np\n\ndef compare_loss(benchmark_loss_array, sdaa_loss_array):\n    mean_relative_error = ((sdaa_loss_array - benchmark_loss_array) / benchmark_loss_array).mean()\n    mean_absolute_error = (sdaa_loss_array - benchmark_loss_array).mean()\n    print(\"MeanRelativeError:\", mean_relative_error)\n    print(\"MeanAbsoluteError:\", mean_absolute_error)\n    return mean_relative_error <= 0.05 or mean_absolute_error <= 0.0002\n";

pub const TRAIN_PY: &str = "import os\nimport torch\ntry:\n    import torch_sdaa\nexcept ImportError:\n    pass\nimport tcap_dllogger\nfrom models import Net\nfrom utils.data import loader\n";

/// A complete Python model directory under `root/PyTorch/contrib/Classification/<model>`,
/// consistent across its files: every rule passes.
pub fn model(root: &Path, model: &str) -> PathBuf {
    let d = root.join("PyTorch/contrib/Classification").join(model);
    let (c, s) = (cuda_values(), sdaa_values(1.001));
    let (mre, mae) = figures(&c, &s);
    write(&d.join("README.md"), readme(model, &results_text(mre, mae)));
    write(
        &d.join("requirements.txt"),
        "numpy\nscipy\ngit+https://github.com/Tecorigin/tcap_dllogger.git\n",
    );
    write(&d.join("train.py"), TRAIN_PY);
    write(
        &d.join("models.py"),
        "import torch.nn as nn\nclass Net(nn.Module):\n    pass\n",
    );
    write(&d.join("utils/__init__.py"), "");
    write(
        &d.join("utils/data.py"),
        "from .sampler import Sampler\ndef loader():\n    pass\n",
    );
    write(&d.join("utils/sampler.py"), "class Sampler:\n    pass\n");
    write(
        &d.join("run_scripts/run_demo.py"),
        "from argument import parse_args\nimport subprocess\n",
    );
    write(
        &d.join("run_scripts/argument.py"),
        "import argparse\ndef parse_args():\n    p = argparse.ArgumentParser()\n    p.add_argument('--step', type=int, default=-1)\n    p.add_argument('--nproc_per_node', type=int, default=1)\n    return p.parse_args()\n",
    );
    write(
        &d.join("run_scripts/formate_cmd.py"),
        "def fmt(c):\n    return c\n",
    );
    let mut args = String::from("| 参数名 | 说明 |\n|---|---|\n");
    for a in [
        "model_name",
        "batch_size",
        "epoch",
        "step",
        "dataset_path",
        "lr",
        "device",
        "autocast",
        "nproc_per_node",
    ] {
        args.push_str(&format!("| {a} | the {a} |\n"));
    }
    write(&d.join("run_scripts/README.md"), args);
    write(&d.join("run_scripts/test.sh"), TEST_SH);
    write(&d.join("run_scripts/loss.py"), LOSS_PY);
    write(&d.join("run_scripts/loss.jpg"), b"\xff\xd8\xff");
    write(&d.join("run_scripts/cuda.log"), tcap_log(&c));
    write(
        &d.join("run_scripts/sdaa.log"),
        format!("{BANNER}{}", tcap_log(&s)),
    );
    d
}

pub fn check(dir: &Path) -> DirReport {
    Validator::new(&Options::default())
        .unwrap()
        .with_review(true)
        .check_dir(dir)
        .unwrap()
}

pub fn rules(r: &DirReport) -> Vec<&'static str> {
    r.findings.iter().map(|f| f.rule).collect()
}

/// The findings of `rule`, as `file[:line]: message`.
pub fn of(r: &DirReport, rule: &str) -> Vec<String> {
    r.findings
        .iter()
        .filter(|f| f.rule == rule)
        .map(|f| format!("{}: {}", validator::layout::location(f), f.message))
        .collect()
}

pub fn assert_clean(d: &Path) {
    let r = check(d);
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
}
