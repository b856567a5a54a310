//! `Model.use_recompute`: GPT's blocks rerun in backward instead of keeping activations, and
//! nothing else changes — the same loss and the same gradient for every parameter, with
//! dropout on (its masks must be drawn again identically in the rerun). Its own test binary:
//! libtorch's RNG is process-global, and the two runs must see the same draws.
//!
//! Tolerance: 1e-6 relative to each gradient's largest entry. The rerun is the same fp32 ops
//! on the same inputs with the same masks (seen: bit-identical), while a lost dropout mask
//! changes gradients by 1e-2 or more.

use std::path::Path;

use modelzoo_gpt::config::GptConfig;
use modelzoo_gpt::Gpt;
use tch::nn::VarStore;
use tch::{Device, Kind, Tensor};

fn loss_and_grads(vs: &VarStore, model: &Gpt, ids: &Tensor) -> (f64, Vec<(String, Tensor)>) {
    let (input, labels) = (ids.narrow(1, 0, 32), ids.narrow(1, 1, 32));
    tch::manual_seed(77);
    let loss = Gpt::loss(&model.forward(&input, None, true).unwrap(), &labels);
    loss.backward();
    let mut grads: Vec<(String, Tensor)> = vs
        .variables()
        .into_iter()
        .map(|(n, t)| {
            let g = t.grad();
            let g = if g.defined() { g.copy() } else { g };
            (n, g)
        })
        .collect();
    grads.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, t) in vs.variables() {
        let mut g = t.grad();
        if g.defined() {
            let _ = g.zero_();
        }
    }
    (loss.double_value(&[]), grads)
}

#[test]
fn recompute_gives_the_same_loss_and_gradients_with_dropout() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/gpt_tiny.yaml");
    let mut m = GptConfig::load(Some(&path), &[]).unwrap().model;
    m.hidden_dropout_prob = 0.1;
    m.attention_probs_dropout_prob = 0.1;
    tch::manual_seed(3);
    let vs = VarStore::new(Device::Cpu);
    let mut model = Gpt::new(&vs.root(), &m);
    let ids = Tensor::randint(m.vocab_size, [4, 33], (Kind::Int64, Device::Cpu));
    let (l0, g0) = loss_and_grads(&vs, &model, &ids);
    model.set_recompute(true);
    let (l1, g1) = loss_and_grads(&vs, &model, &ids);
    let tol = 1e-6;
    assert!(
        (l0 - l1).abs() <= tol * l0.abs(),
        "loss {l0} vs {l1} with recompute"
    );
    for ((n, a), (_, b)) in g0.iter().zip(&g1) {
        assert!(a.defined() && b.defined(), "{n}: gradient missing");
        let scale = a.abs().max().double_value(&[]);
        let diff = (a - b).abs().max().double_value(&[]);
        assert!(scale > 0.0, "{n}: zero gradient");
        assert!(
            diff <= tol * scale,
            "{n}: differs by {diff:e} (scale {scale:e})"
        );
    }
    // Dropout acts: another seed gives another loss (so the masks above mattered).
    model.set_recompute(false);
    let (input, labels) = (ids.narrow(1, 0, 32), ids.narrow(1, 1, 32));
    tch::manual_seed(78);
    let other = tch::no_grad(|| Gpt::loss(&model.forward(&input, None, true).unwrap(), &labels));
    assert!((other.double_value(&[]) - l0).abs() > 1e-4);
}
