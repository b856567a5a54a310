//! Real training runs of run_vit (`vit_tiny`, 32 px synthetic images) on the CPU: the loss
//! falls, exact resume, bf16 autocast, `--pretrained` weights, bad input.

mod common;

use common::{log_of, run, series, set, small, text, with};

#[test]
fn loss_falls_and_val_metrics_are_logged() {
    let dir = tempfile::tempdir().unwrap();
    let args = with(
        small(dir.path()),
        &[
            "--synthetic_samples",
            "512",
            "--bs",
            "32",
            "--epoch",
            "2",
            "--lr",
            "0.003",
            "--weight_decay",
            "0.05",
            "--label_smoothing",
            "0",
            "--logging_freq",
            "1",
        ],
    );
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o));
    let log = log_of(dir.path(), "vit_tiny");
    let losses = series(&log, "train.loss");
    assert_eq!(losses.len(), 32, "{losses:?}");
    // The classifier starts at zero (torchvision): the first loss is exactly ln(10).
    assert!(
        (losses[0].1 - 10f64.ln()).abs() < 1e-4,
        "first loss {} vs ln 10",
        losses[0].1
    );
    let mean = |s: &[(u64, f64)]| s.iter().map(|(_, l)| l).sum::<f64>() / s.len() as f64;
    let (first, last) = (mean(&losses[..4]), mean(&losses[28..]));
    assert!(
        last < 0.6 * first,
        "loss did not fall: first 4 steps {first:.3}, last 4 {last:.3}\n{losses:?}"
    );
    let top1 = series(&log, "val.top1");
    eprintln!("loss first 4 {first:.4}, last 4 {last:.4}; val.top1 {top1:?}");
    assert_eq!(top1.len(), 2, "one validation per epoch");
    assert!(
        top1[1].1 > 50.0,
        "val.top1 {top1:?} (10 classes: chance is 10)"
    );
    assert_eq!(series(&log, "val.top5").len(), 2);
    assert_eq!(series(&log, "val.loss").len(), 2);
    assert!(series(&log, "train.ips").iter().all(|(_, v)| *v > 0.0));
    // The warmup (10% of 32 steps = 3) then cosine: lr rises, peaks at --lr, falls.
    let lr = series(&log, "train.lr");
    assert!(
        lr[0].1 < lr[2].1 && (lr[2].1 - 0.003).abs() < 1e-9,
        "{lr:?}"
    );
    assert!(lr[31].1 < lr[10].1, "{lr:?}");
}

#[test]
fn resume_reproduces_the_uninterrupted_loss_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let (a, c) = (dir.path().join("a"), dir.path().join("c"));
    let common_args = [
        "--synthetic_samples",
        "128",
        "--bs",
        "16",
        "--step",
        "4",
        "--logging_freq",
        "1",
        "--lr",
        "0.001",
        "-o",
        "Engine.save_load.save_steps=2",
    ];
    let o = run(&with(small(&a), &common_args));
    assert!(o.status.success(), "{}", text(&o));
    let want = series(&log_of(&a, "vit_tiny"), "train.loss");
    assert_eq!(want.len(), 4, "{want:?}");
    let ckpt = a.join("checkpoints/step_00000002.ckpt");
    assert!(ckpt.is_file(), "no {}", ckpt.display());
    let o = run(&with(
        with(small(&c), &common_args),
        &["--resume", &ckpt.display().to_string()],
    ));
    assert!(o.status.success(), "{}", text(&o));
    let got = series(&log_of(&c, "vit_tiny"), "train.loss");
    // The engine's guarantee: bit-identical losses (same RNG and data order from the counters).
    assert_eq!(
        got,
        want[2..].to_vec(),
        "resumed losses differ from the uninterrupted run"
    );
}

#[test]
fn bf16_autocast_on_cpu_trains_and_differs_from_fp32() {
    let dir = tempfile::tempdir().unwrap();
    let base = [
        "--synthetic_samples",
        "64",
        "--bs",
        "16",
        "--step",
        "3",
        "--logging_freq",
        "1",
        "--label_smoothing",
        "0",
    ];
    let (bf, fp) = (dir.path().join("bf16"), dir.path().join("fp32"));
    let o = run(&with(with(small(&bf), &base), &["--autocast"]));
    assert!(o.status.success(), "{}", text(&o));
    let o2 = run(&with(small(&fp), &base));
    assert!(o2.status.success(), "{}", text(&o2));
    let b = series(&log_of(&bf, "vit_tiny"), "train.loss");
    let f = series(&log_of(&fp, "vit_tiny"), "train.loss");
    assert_eq!((b.len(), f.len()), (3, 3));
    assert!(b.iter().all(|(_, l)| l.is_finite() && *l > 0.0), "{b:?}");
    // Same weights and batches: bf16 agrees with fp32 to bf16 accuracy, yet really differs.
    assert_ne!(b, f, "bf16 and fp32 runs gave identical losses");
    for ((_, x), (_, y)) in b.iter().zip(&f) {
        assert!((x - y).abs() / y < 0.05, "bf16 {x} vs fp32 {y}");
    }
}

/// `--pretrained` starts from the file's tensors: with a learning rate of 1e-9 and no weight
/// decay, the weights after one step are the file's to 1e-6 (an AdamW step moves each by
/// at most about lr).
#[test]
fn pretrained_weights_are_what_training_starts_from() {
    use modelzoo_vit::{Variant, ViT};
    use tch::{nn, Tensor};
    let dir = tempfile::tempdir().unwrap();
    tch::manual_seed(7);
    let vs = nn::VarStore::new(tch::Device::Cpu);
    let _ = ViT::new(&vs.root(), Variant::ViTTiny, 32, 10).unwrap();
    // Move every tensor away from its initial value (the head starts at 0).
    tch::no_grad(|| {
        for (_, t) in vs.variables() {
            let _ = t.shallow_clone().g_add_(&(t.randn_like() * 0.1));
        }
    });
    let named: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
    let refs: Vec<(&str, &Tensor)> = named.iter().map(|(k, t)| (k.as_str(), t)).collect();
    let file = dir.path().join("tiny.safetensors");
    Tensor::write_safetensors(&refs, &file).unwrap();
    let out = dir.path().join("run");
    let o = run(&with(
        small(&out),
        &[
            "--pretrained",
            file.to_str().unwrap(),
            "--synthetic_samples",
            "32",
            "--bs",
            "16",
            "--step",
            "1",
            "--lr",
            "1e-9",
            "--wd",
            "0",
        ],
    ));
    assert!(o.status.success(), "{}", text(&o));
    let ckpt = out.join("checkpoints/step_00000001.ckpt");
    let saved: std::collections::HashMap<String, Tensor> =
        Tensor::load_multi(&ckpt).unwrap().into_iter().collect();
    for (k, t) in &named {
        let got = saved
            .get(&format!("model/{k}"))
            .unwrap_or_else(|| panic!("checkpoint lacks model/{k}"));
        let d = (got - t).abs().max().double_value(&[]);
        assert!(d < 1e-6, "{k}: {d}");
    }
    // Loaded, not initialised: the head is far from torchvision's zero start.
    assert!(
        saved["model/heads.head.weight"]
            .abs()
            .max()
            .double_value(&[])
            > 0.05,
        "head not loaded"
    );
}

#[test]
fn bad_input_is_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    // A patch size that does not divide the image.
    let o = run(&set(small(&dir.path().join("a")), "--image_size", "30"));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let t = text(&o);
    assert!(
        t.contains("--image_size 30 is not a multiple of vit_tiny's patch size 8")
            && !t.contains("panicked"),
        "{t}"
    );
    // --pretrained naming no file.
    let o = run(&with(
        small(&dir.path().join("b")),
        &["--pretrained", "/nonexistent/w.safetensors"],
    ));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--pretrained /nonexistent/w.safetensors: no such file"),
        "{}",
        text(&o)
    );
    // --pretrained with another model's weights (vit_tiny for 10 classes into 7).
    let src = tch::nn::VarStore::new(tch::Device::Cpu);
    let _ = modelzoo_vit::ViT::new(&src.root(), modelzoo_vit::Variant::ViTTiny, 32, 10).unwrap();
    let named: Vec<(String, tch::Tensor)> = src.variables().into_iter().collect();
    let refs: Vec<(&str, &tch::Tensor)> = named.iter().map(|(k, t)| (k.as_str(), t)).collect();
    let file = dir.path().join("w.safetensors");
    tch::Tensor::write_safetensors(&refs, &file).unwrap();
    let o = run(&with(
        set(small(&dir.path().join("c")), "--num_classes", "7"),
        &["--pretrained", file.to_str().unwrap()],
    ));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("\"heads.head.bias\" has shape [10] but the model needs [7]"),
        "{}",
        text(&o)
    );
}
