//! The network at library level: the KV cache changes nothing but speed (cached decoding
//! equals recomputing the whole sequence for every token), and activation recompute changes
//! nothing but memory (same loss, same gradients, with dropout and under bf16 autocast).

use std::path::{Path, PathBuf};

use device_sdaa::Device as RunDevice;
use modelzoo_engine::TrainDevice;
use modelzoo_llama::config::{LlamaConfig, Model};
use modelzoo_llama::generate::generate;
use modelzoo_llama::{KvCache, Llama};
use modelzoo_text::config::DecodeStrategy;
use tch::nn::VarStore;
use tch::{Device, Kind, Tensor};

/// libtorch's global RNG (weight init, dropout) is shared by the test threads: each test
/// holds this while it draws.
static RNG: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn rng_lock() -> std::sync::MutexGuard<'static, ()> {
    RNG.lock().unwrap_or_else(|e| e.into_inner())
}

fn tiny() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/llama_tiny.yaml")
}

fn tiny_model() -> Model {
    LlamaConfig::load(Some(&tiny()), &[]).unwrap().model
}

/// A tiny model with weights large enough (std 0.1) that its predictions depend on context.
fn build(m: &Model, seed: i64) -> (VarStore, Llama) {
    tch::manual_seed(seed);
    let mut m = m.clone();
    m.initializer_range = 0.1;
    let vs = VarStore::new(Device::Cpu);
    let model = Llama::new(&vs.root(), &m);
    (vs, model)
}

/// Greedy decoding with the KV cache (the shared generate loop) equals greedy decoding that
/// runs the whole sequence through the model for every new token; and the cached logits equal
/// the full forward's within 1e-5 (same fp32 kernels, attention over the same keys in a
/// different blocking: a few ulps).
#[test]
fn generation_with_the_kv_cache_equals_recomputing_the_sequence() {
    let _rng = rng_lock();
    let m = tiny_model();
    let (_vs, model) = build(&m, 11);
    let prompt: Vec<i64> = vec![65, 100, 97, 32, 119, 97, 108, 107];
    let mut gen = LlamaConfig::load(Some(&tiny()), &[]).unwrap().generation;
    gen.decode_strategy = DecodeStrategy::GreedySearch;
    gen.max_dec_len = 24;
    let cached = generate(&model, &prompt, &gen, None, 0, &Device::Cpu).unwrap();

    let mut seq = prompt.clone();
    let mut plain = Vec::new();
    tch::no_grad(|| {
        for _ in 0..gen.max_dec_len {
            let ids = Tensor::from_slice(&seq).view([1, -1]);
            let logits = model.forward(&ids, None, false).unwrap();
            let next = logits.get(0).get(-1).argmax(0, false).int64_value(&[]);
            plain.push(next);
            seq.push(next);
        }
    });
    assert_eq!(cached[0], plain);
    let distinct: std::collections::BTreeSet<_> = plain.iter().collect();
    assert!(
        distinct.len() > 1,
        "degenerate test: one token repeated {plain:?}"
    );

    // Logits: prompt, then one token at a time, then two at once (the offset causal mask).
    let full = tch::no_grad(|| {
        model
            .forward(&Tensor::from_slice(&seq).view([1, -1]), None, false)
            .unwrap()
    });
    let mut cache = KvCache::new();
    let p = prompt.len() as i64;
    let mut parts = vec![tch::no_grad(|| {
        model
            .forward(
                &Tensor::from_slice(&prompt).view([1, -1]),
                Some(&mut cache),
                false,
            )
            .unwrap()
    })];
    let mut pos = p;
    while pos < seq.len() as i64 {
        let n = if pos == p + 3 { 2 } else { 1 }.min(seq.len() as i64 - pos);
        let ids = Tensor::from_slice(&seq[pos as usize..(pos + n) as usize]).view([1, -1]);
        parts.push(tch::no_grad(|| {
            model.forward(&ids, Some(&mut cache), false).unwrap()
        }));
        pos += n;
    }
    let incremental = Tensor::cat(&parts, 1);
    let diff = (&incremental - &full).abs().max().double_value(&[]);
    assert!(diff <= 1e-5, "cached vs full logits: max diff {diff:e}");
    assert_eq!(cache.len(), seq.len() as i64);

    // Sampling is deterministic per seed and differs across seeds.
    gen.decode_strategy = DecodeStrategy::Sampling;
    let a = generate(&model, &prompt, &gen, None, 5, &Device::Cpu).unwrap();
    let b = generate(&model, &prompt, &gen, None, 5, &Device::Cpu).unwrap();
    let c = generate(&model, &prompt, &gen, None, 6, &Device::Cpu).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
}

/// Loss and gradients of one training forward/backward, with activation recompute on or off.
fn loss_and_grads(m: &Model, recompute: bool, amp: Option<Kind>) -> (f64, Vec<(String, Tensor)>) {
    let (vs, mut model) = build(m, 3);
    model.set_recompute(recompute);
    let ids = Tensor::randint(m.vocab_size, [4, 33], (Kind::Int64, Device::Cpu));
    let (input, labels) = (ids.narrow(1, 0, 32), ids.narrow(1, 1, 32));
    // The same dropout masks for both runs (and, inside recompute, for the rerun).
    tch::manual_seed(77);
    let dev = RunDevice::cpu();
    let mut forward = || Llama::loss(&model.forward(&input, None, true).unwrap(), &labels);
    let loss = match amp {
        Some(kind) => dev.autocast_with(true, kind, &mut forward),
        None => forward(),
    };
    loss.backward();
    let mut grads: Vec<(String, Tensor)> = vs
        .variables()
        .into_iter()
        .map(|(n, t)| {
            let g = t.grad();
            (n, if g.defined() { g.copy() } else { g })
        })
        .collect();
    grads.sort_by(|a, b| a.0.cmp(&b.0));
    (loss.double_value(&[]), grads)
}

/// Recompute on vs off: the same loss and every gradient equal within `tol` (relative to the
/// gradient's largest entry). Expected bit-identical on the CPU — the rerun is the same fp32
/// (or bf16) ops on the same inputs with the same dropout masks — so 1e-6 only leaves room
/// for a kernel choosing another blocking; a lost dropout mask or autocast state in the rerun
/// changes gradients by 1e-2 or more.
fn assert_recompute_matches(m: &Model, amp: Option<Kind>) {
    let (l0, g0) = loss_and_grads(m, false, amp);
    let (l1, g1) = loss_and_grads(m, true, amp);
    let tol = 1e-6;
    assert!(
        (l0 - l1).abs() <= tol * l0.abs(),
        "loss {l0} vs {l1} with recompute"
    );
    assert_eq!(g0.len(), g1.len());
    for ((n, a), (_, b)) in g0.iter().zip(&g1) {
        assert!(
            a.defined() && b.defined(),
            "{n}: no gradient (without recompute: {}, with: {})",
            a.defined(),
            b.defined()
        );
        let scale = a.abs().max().double_value(&[]);
        let diff = (a - b).abs().max().double_value(&[]);
        assert!(scale > 0.0, "{n}: zero gradient");
        assert!(
            diff <= tol * scale,
            "{n}: gradient differs by {diff:e} (scale {scale:e}) with recompute"
        );
    }
}

#[test]
fn recompute_gives_the_same_loss_and_gradients_with_dropout() {
    let _rng = rng_lock();
    let mut m = tiny_model();
    m.attention_probs_dropout_prob = 0.2;
    assert_recompute_matches(&m, None);
    // Dropout really acts (else the RNG restore above would be untested).
    let (a, _) = loss_and_grads(&m, false, None);
    m.attention_probs_dropout_prob = 0.0;
    let (b, _) = loss_and_grads(&m, false, None);
    assert!((a - b).abs() > 1e-4, "dropout changed nothing: {a} vs {b}");
}

#[test]
fn recompute_gives_the_same_gradients_under_bf16_autocast_and_tied_embeddings() {
    let _rng = rng_lock();
    let mut m = tiny_model();
    m.tie_word_embeddings = true;
    assert_recompute_matches(&m, Some(Kind::BFloat16));
}

/// The shipped configs load and describe the models they name: TinyLlama-1.1B's and
/// LLaMA-2-7B's published parameter counts, and the tiny model's variables add up to its count.
#[test]
fn shipped_configs_have_the_published_parameter_counts() {
    let _rng = rng_lock(); // Llama::new draws its initial weights
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs");
    let count = |name: &str| {
        LlamaConfig::load(Some(&dir.join(name)), &[])
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .model
            .num_params()
    };
    assert_eq!(count("llama_1.1b_single_card.yaml"), 1_100_048_384);
    assert_eq!(count("llama2_7b_single_card.yaml"), 6_738_415_616);
    let m = tiny_model();
    let vs = VarStore::new(Device::Cpu);
    let model = Llama::new(&vs.root(), &m);
    let numel: u64 = vs.variables().values().map(|t| t.numel() as u64).sum();
    assert_eq!(model.num_params(), numel);
    assert_eq!(numel, 445_056);
}
