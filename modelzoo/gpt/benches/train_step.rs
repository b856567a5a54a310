//! Training-step throughput of the GPT model (forward + backward + AdamW, fp32, CPU), the
//! Rust side of scripts/bench/gpt_step.sh; scripts/bench/gpt_step.py is the PyTorch eager
//! side with the same model, shapes, sdpa and precision. Usage:
//! `cargo bench -p modelzoo-gpt --bench train_step -- tiny|124m`.

use std::path::Path;
use std::time::Instant;

use modelzoo_gpt::config::GptConfig;
use modelzoo_gpt::Gpt;
use tch::nn::{self, OptimizerConfig};
use tch::{Device, Kind, Tensor};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let which = args.first().map(String::as_str).unwrap_or("tiny");
    let (file, batch, seq, steps) = match which {
        "tiny" => ("gpt_tiny.yaml", 16i64, 64i64, 30u32),
        "124m" => ("gpt_124m.yaml", 1, 128, 3),
        other => {
            eprintln!("error: unknown case `{other}`; use tiny or 124m");
            std::process::exit(2);
        }
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("configs")
        .join(file);
    let overrides = [
        "Model.hidden_dropout_prob=0".to_string(),
        "Model.attention_probs_dropout_prob=0".to_string(),
    ];
    let cfg = match GptConfig::load(Some(&path), &overrides) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    tch::manual_seed(0);
    let vs = nn::VarStore::new(Device::Cpu);
    let model = Gpt::new(&vs.root(), &cfg.model);
    let mut opt = match nn::AdamW::default().build(&vs, 1e-4) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let ids = Tensor::randint(
        cfg.model.vocab_size,
        [batch, seq + 1],
        (Kind::Int64, Device::Cpu),
    );
    let x = ids.narrow(1, 0, seq).contiguous();
    let y = ids.narrow(1, 1, seq).contiguous();
    let mut step = || {
        let logits = match model.forward(&x, None, true) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(2);
            }
        };
        let loss = Gpt::loss(&logits, &y);
        opt.zero_grad();
        loss.backward();
        opt.step();
        loss.double_value(&[])
    };
    step();
    let start = Instant::now();
    for _ in 0..steps {
        step();
    }
    let secs = start.elapsed().as_secs_f64();
    let tokens = (batch * seq) as f64 * f64::from(steps);
    println!(
        "rust-tch  {which:5} batch {batch} seq {seq} steps {steps}: {:.1} tokens/s ({:.3} s/step, {} threads)",
        tokens / secs,
        secs / f64::from(steps),
        tch::get_num_threads()
    );
}
