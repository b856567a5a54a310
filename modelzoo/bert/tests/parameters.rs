//! Parameter counts: run_bert's (the PARAMETER record's `parameters`, the trainable variables
//! of the VarStore) equal transformers' `sum(p.numel() for p in model.parameters())` for
//! every head, for BERT-Base and BERT-Large with the 30522-id vocabulary (counted from the
//! shapes) and for the tiny shape (counted from the built VarStore too). transformers counts
//! on the meta device (tests/hf_reference.py count), so nothing large is allocated.

use std::path::Path;
use std::process::Command;

use modelzoo_bert::{Bert, Task, Variant};
use tch::nn::VarStore;

fn transformers_counts(c: &modelzoo_bert::BertConfig) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hf_reference.py");
    let kwargs = format!(
        r#"{{"vocab_size":{},"hidden_size":{},"num_hidden_layers":{},"num_attention_heads":{},"intermediate_size":{}}}"#,
        c.vocab_size,
        c.hidden_size,
        c.num_hidden_layers,
        c.num_attention_heads,
        c.intermediate_size
    );
    let o = Command::new(modelzoo_testkit::venv_python())
        .args([script.to_str().unwrap(), "count", &kwargs])
        .env("OMP_NUM_THREADS", "1")
        .output()
        .expect("run .venv/bin/python");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn counts_equal_transformers_for_every_variant_and_head() {
    let tasks = [
        Task::Pretrain,
        Task::Classification { num_labels: 3 },
        Task::Squad,
    ];
    for (variant, vocab) in [
        (Variant::BertBase, 30522),
        (Variant::BertLarge, 30522),
        (Variant::BertTiny, 336),
    ] {
        let c = variant.config(vocab);
        let hf = transformers_counts(&c);
        for task in tasks {
            let want = hf[task.hf_class()].as_u64().unwrap();
            assert_eq!(c.num_params(task), want, "{variant} {}", task.hf_class());
            if variant == Variant::BertTiny {
                let vs = VarStore::new(tch::Device::Cpu);
                let _ = Bert::new(&vs.root(), &c, task);
                let built = modelzoo_engine::parameter_count(&vs) as u64;
                assert_eq!(built, want, "{variant} {} built", task.hf_class());
            }
        }
    }
}
