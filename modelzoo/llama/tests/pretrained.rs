//! `--pretrained`: run_llama starts training, or generates, from a Hugging Face
//! `LlamaForCausalLM` safetensors state dict (written here by tests/hf_reference.py with
//! llama_tiny.yaml's architecture); a state dict of another shape is an exit-2 error naming
//! the tensor.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_run_llama");

fn tiny() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/llama_tiny.yaml")
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env("RUST_LOG", "warn")
        .output()
        .expect("run_llama starts")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn training_and_generation_start_from_hugging_face_weights() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(modelzoo_testkit::venv_python())
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hf_reference.py"))
        .arg(dir.path())
        .arg(r#"{"vocab_size":320,"hidden_size":128,"intermediate_size":344,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"max_position_embeddings":128,"rms_norm_eps":1e-6,"rope_theta":10000.0,"tie_word_embeddings":false}"#)
        .env("OMP_NUM_THREADS", "1")
        .output()
        .expect("run .venv/bin/python");
    assert!(o.status.success(), "{}", text(&o));
    let weights = dir.path().join("weights.safetensors");
    let w = weights.to_str().unwrap();
    let cfg = tiny();
    let c = cfg.to_str().unwrap();
    let out = |name: &str| dir.path().join(name).display().to_string();

    // Step 1 trains at lr 0 (warmup), so its loss is the loaded weights' loss: the same
    // batch gives another loss from the random initialisation.
    let first_loss = |extra: &[&str], o_dir: &str| {
        let mut args = vec![
            "-c",
            c,
            "--step",
            "1",
            "--batch_size",
            "4",
            "--output_dir",
            o_dir,
        ];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert!(o.status.success(), "{}", text(&o));
        let log = Path::new(o_dir).join("llama_log.json");
        dllogger::open(&log)
            .unwrap()
            .find_map(|r| r.get("train.loss"))
            .expect("train.loss")
    };
    let hf = first_loss(&["--pretrained", w], &out("hf"));
    let hf_again = first_loss(&["--pretrained", w], &out("hf2"));
    let random = first_loss(&[], &out("random"));
    assert_eq!(hf, hf_again);
    assert!(
        (hf - random).abs() > 0.1,
        "pretrained {hf} vs random init {random}"
    );

    // Generation straight from the Hugging Face weights.
    let gen = || {
        run(&[
            "-c",
            c,
            "--generate",
            "--pretrained",
            w,
            "--prompt",
            "Hello",
            "-o",
            "Generation.decode_strategy=greedy_search",
            "-o",
            "Generation.max_dec_len=8",
        ])
    };
    let a = gen();
    assert!(a.status.success(), "{}", text(&a));
    assert!(String::from_utf8_lossy(&a.stdout).contains("Generation: Hello"));
    assert_eq!(a.stdout, gen().stdout);

    // Another architecture: exit 2 naming the tensor whose shape differs.
    let o = run(&[
        "-c",
        c,
        "--pretrained",
        w,
        "-o",
        "Model.num_key_value_heads=4",
        "--output_dir",
        &out("bad"),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("model.layers.0.self_attn.k_proj.weight"),
        "{}",
        text(&o)
    );
}
