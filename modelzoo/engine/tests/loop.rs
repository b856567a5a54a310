//! The engine loop on a tiny linear classifier: accumulation equals a bigger batch, metrics are
//! declared and logged, evaluation counts, checkpoints round-trip.

use std::sync::Arc;

use modelzoo_engine::rng::SplitMix64;
use modelzoo_engine::{
    Algorithm, BasicModule, BatchError, BatchSource, Engine, EngineError, EngineSettings,
    EvalOutput, MetricSink, OptimizerConfig, Schedule, TrainDevice,
};
use modelzoo_vision::{Dataset, ImageBatch, Loader, LoaderOptions, Sample, SampleError};
use tch::nn::{self, Module};
use tch::{Kind, Reduction, Tensor};

struct Blobs;
impl Dataset for Blobs {
    fn len(&self) -> usize {
        64
    }
    fn sample_shape(&self) -> [usize; 3] {
        [1, 2, 2]
    }
    fn load(&self, index: usize, _rng: &mut SplitMix64) -> Result<Sample, SampleError> {
        let label = (index % 2) as i64;
        let mut r = SplitMix64::new(index as u64);
        let c = if label == 0 { -1.0 } else { 1.0 };
        Ok(Sample {
            pixels: (0..4).map(|_| c + 0.3 * r.normal() as f32).collect(),
            label,
        })
    }
}

struct Linear {
    vs: nn::VarStore,
    fc: nn::Linear,
}

impl Linear {
    /// Fixed initial weights, not drawn from libtorch's global generator: tests run in
    /// parallel threads of one process and would race on it.
    fn new() -> Linear {
        let vs = nn::VarStore::new(tch::Device::Cpu);
        let mut fc = nn::linear(vs.root() / "fc", 4, 2, Default::default());
        tch::no_grad(|| {
            let w = Tensor::arange(8, (Kind::Float, tch::Device::Cpu)).view([2, 4]) * 0.1 - 0.35;
            fc.ws.copy_(&w);
            if let Some(b) = fc.bs.as_mut() {
                let _ = b.zero_();
            }
        });
        Linear { vs, fc }
    }
}

impl BasicModule for Linear {
    type Batch = ImageBatch;
    fn items_in(&self, b: &ImageBatch) -> usize {
        b.len()
    }
    fn ips_unit(&self) -> &'static str {
        "imgs/s"
    }
    fn val_metric_meta(&self) -> Vec<(&'static str, &'static str, &'static str)> {
        vec![("val.top1", "%", "MAXIMIZE"), ("val.top5", "%", "MAXIMIZE")]
    }
    fn var_store(&self) -> &nn::VarStore {
        &self.vs
    }
    fn var_store_mut(&mut self) -> &mut nn::VarStore {
        &mut self.vs
    }
    fn pretreating_batch(&mut self, b: ImageBatch, d: &dyn TrainDevice) -> ImageBatch {
        ImageBatch {
            images: d.to_device(&b.images.flatten(1, -1)),
            labels: d.to_device(&b.labels),
        }
    }
    fn training_step(&mut self, b: &ImageBatch) -> Tensor {
        self.fc
            .forward(&b.images)
            .cross_entropy_for_logits(&b.labels)
    }
    fn validation_step(&mut self, b: &ImageBatch) -> EvalOutput {
        let logits = self.fc.forward(&b.images);
        let loss_sum =
            logits.cross_entropy_loss::<Tensor>(&b.labels, None, Reduction::Sum, -100, 0.0);
        let hits = logits
            .argmax(1, false)
            .eq_tensor(&b.labels)
            .sum(Kind::Int64);
        EvalOutput {
            loss_sum,
            counts: vec![("top1", hits)],
            samples: b.len(),
        }
    }
    fn test_step(&mut self, b: &ImageBatch) -> Tensor {
        self.fc.forward(&b.images).argmax(1, false)
    }
    fn configure_optimizers(&self, _: u64, _: u64) -> OptimizerConfig {
        OptimizerConfig {
            lr: 0.1,
            algorithm: Algorithm::Sgd {
                momentum: 0.9,
                nesterov: false,
            },
            weight_decay: 0.0,
            schedule: Schedule::Constant,
            clip_grad_norm: Some(10.0),
        }
    }
}

/// (epoch, iteration, metrics) of one logged line.
type Line = (u64, u64, Vec<(String, f64)>);

#[derive(Default)]
struct Collect {
    meta: Vec<String>,
    lines: Vec<Line>,
    /// Driver events: (name, fields).
    events: Vec<(String, Vec<(String, f64)>)>,
}
impl MetricSink for &mut Collect {
    fn metadata(&mut self, name: &str, _: &str, _: &str, _: &str) {
        self.meta.push(name.to_string());
    }
    fn log(&mut self, e: u64, i: u64, m: &[(&str, f64)]) {
        self.lines
            .push((e, i, m.iter().map(|(k, v)| (k.to_string(), *v)).collect()));
    }
    fn event(&mut self, name: &str, f: &[(&str, f64)]) {
        self.events.push((
            name.to_string(),
            f.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        ));
    }
}

fn loader(bs: usize) -> Loader {
    Loader::new(
        Arc::new(Blobs),
        LoaderOptions {
            batch_size: bs,
            shuffle: true,
            drop_last: true,
            num_workers: 1,
            prefetch: 2,
            seed: 3,
        },
    )
}

fn train(bs: usize, accum: u64, dir: &std::path::Path) -> (Vec<f32>, Collect) {
    let mut sink = Collect::default();
    let dev = tch::Device::Cpu;
    let settings = EngineSettings {
        accumulate_steps: accum,
        num_train_epochs: 2,
        ckpt_dir: dir.to_path_buf(),
        progress: false,
        ..EngineSettings::default()
    };
    let weights = {
        let mut e = Engine::new(Linear::new(), &dev, settings, Box::new(&mut sink)).unwrap();
        let s = e.fit(&loader(bs), Some(&loader(16))).unwrap();
        assert_eq!(s.steps, 2 * 64 / (bs as u64 * accum));
        Vec::<f32>::try_from(e.module.fc.ws.flatten(0, -1)).unwrap()
    };
    (weights, sink)
}

#[test]
fn accumulating_two_half_batches_equals_one_full_batch() {
    let d = tempfile::tempdir().unwrap();
    let (full, sink) = train(16, 1, &d.path().join("a"));
    let (accum, _) = train(8, 2, &d.path().join("b"));
    for (a, b) in full.iter().zip(&accum) {
        assert!((a - b).abs() < 1e-5, "{full:?} vs {accum:?}");
    }
    for m in [
        "train.loss",
        "train.ips",
        "train.lr",
        "val.loss",
        "val.top1",
        "val.top5",
    ] {
        assert!(sink.meta.iter().any(|x| x == m), "no metadata for {m}");
    }
    let train_lines = sink
        .lines
        .iter()
        .filter(|l| l.2.iter().any(|(k, _)| k == "train.loss"))
        .count();
    assert_eq!(train_lines, 8, "logging_freq 1 logs every step");
    let top1 = sink
        .lines
        .iter()
        .rev()
        .find_map(|l| l.2.iter().find(|(k, _)| k == "val.top1").map(|x| x.1));
    assert!(top1.unwrap() > 90.0, "separable blobs: {top1:?}");
    assert!(d.path().join("a/step_00000008.ckpt").is_file());
}

#[test]
fn load_restores_saved_weights_and_rejects_other_shapes() {
    let d = tempfile::tempdir().unwrap();
    let (trained, _) = train(16, 1, d.path());
    let dev = tch::Device::Cpu;
    let mut sink = Collect::default();
    let mut e = Engine::new(
        Linear::new(),
        &dev,
        EngineSettings::default(),
        Box::new(&mut sink),
    )
    .unwrap();
    e.load(d.path()).unwrap();
    let got = Vec::<f32>::try_from(e.module.fc.ws.flatten(0, -1)).unwrap();
    assert_eq!(got, trained);
    let preds = e.predict(&loader(16)).unwrap();
    assert_eq!(preds.len(), 4);

    // A checkpoint of another shape is refused with the tensor named.
    let other = tempfile::tempdir().unwrap();
    let p = other.path().join("step_00000001.ckpt");
    modelzoo_engine::checkpoint::write(
        &p,
        &[(
            "model/fc.weight".into(),
            Tensor::zeros([3, 4], (Kind::Float, tch::Device::Cpu)),
        )],
        Default::default(),
    )
    .unwrap();
    let err = e.load(&p).unwrap_err().to_string();
    assert!(
        err.contains("model/fc.bias") || err.contains("fc.weight"),
        "{err}"
    );
}

#[test]
fn fit_emits_the_flagperf_driver_events_with_a_consistent_timing_split() {
    let d = tempfile::tempdir().unwrap();
    let (_, sink) = train(16, 1, d.path());
    let names: Vec<&str> = sink.events.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(names, modelzoo_engine::driver::EVENTS);
    let field = |event: &str, key: &str| -> f64 {
        let (_, fields) = sink.events.iter().find(|e| e.0 == event).unwrap();
        fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|x| x.1)
            .unwrap_or_else(|| panic!("{event} has no {key}: {fields:?}"))
    };
    let times: Vec<f64> = modelzoo_engine::driver::EVENTS
        .iter()
        .map(|e| field(e, "time"))
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "events out of time order: {times:?}"
    );
    let (e2e, init, raw) = (
        field("FINISHED", "e2e_time"),
        field("FINISHED", "init_time"),
        field("FINISHED", "raw_train_time"),
    );
    let (eval, data) = (
        field("FINISHED", "eval_time"),
        field("FINISHED", "data_time"),
    );
    assert!(
        raw > 0.0 && e2e > raw && init >= 0.0,
        "e2e {e2e} init {init} raw {raw}"
    );
    assert!(
        (e2e - init - raw).abs() < 0.05,
        "e2e {e2e} = init {init} + raw {raw}"
    );
    // Two epochs end with an evaluation each, inside the training window.
    assert!(
        eval > 0.0 && data >= 0.0 && eval + data < raw,
        "eval {eval} data {data} raw {raw}"
    );
    // 2 epochs x 64 samples, one process; the linear layer's 4x2 weights + 2 biases.
    assert_eq!(field("FINISHED", "items"), 128.0);
    assert_eq!(field("FINISHED", "steps"), 8.0);
    assert_eq!(field("FINISHED", "num_params"), 10.0);
    assert_eq!(field("FINISHED", "world_size"), 1.0);
    assert!(field("FINISHED", "host_rss_peak") > 0.0);
}

/// The loader's batches, with batch `bad` of every epoch replaced by a data error.
struct FailsAt {
    inner: Loader,
    bad: usize,
}

impl BatchSource<ImageBatch> for FailsAt {
    fn batches_per_epoch(&self) -> usize {
        self.inner.batches_per_epoch()
    }
    fn epoch_batches(
        &self,
        epoch: u64,
        skip: usize,
    ) -> Box<dyn Iterator<Item = Result<ImageBatch, BatchError>> + '_> {
        let bad = self.bad;
        Box::new(
            BatchSource::epoch_batches(&self.inner, epoch, skip)
                .enumerate()
                .map(move |(i, b)| match i + skip == bad {
                    true => {
                        Err(format!("shard 7: token id 999 at batch {bad} is out of range").into())
                    }
                    false => b,
                }),
        )
    }
}

/// Two epochs, checkpoints under `dir`, no progress bar.
fn two_epochs(dir: &std::path::Path) -> EngineSettings {
    EngineSettings {
        num_train_epochs: 2,
        ckpt_dir: dir.join("ckpt"),
        progress: false,
        ..EngineSettings::default()
    }
}

#[test]
fn a_batch_the_source_cannot_produce_stops_fit_and_evaluate_with_its_message() {
    let d = tempfile::tempdir().unwrap();
    let dev = tch::Device::Cpu;
    let mut sink = Collect::default();
    let settings = two_epochs(d.path());
    let mut e = Engine::new(Linear::new(), &dev, settings, Box::new(&mut sink)).unwrap();
    let train = FailsAt {
        inner: loader(16),
        bad: 2,
    };
    let err = e.fit(&train, None).unwrap_err();
    assert!(matches!(err, EngineError::Data(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "shard 7: token id 999 at batch 2 is out of range"
    );
    assert_eq!(err.exit_code(), 2, "the data must change");
    assert_eq!(e.counters().step, 2, "the two good batches were trained on");

    let val = FailsAt {
        inner: loader(16),
        bad: 0,
    };
    let err = e.evaluate(&val).unwrap_err();
    assert!(err.to_string().contains("token id 999"), "{err}");
    let err = e.predict(&val).unwrap_err();
    assert!(err.to_string().contains("token id 999"), "{err}");
}

#[test]
fn fixed_batch_reads_the_source_once_and_trains_every_step_on_that_batch() {
    let d = tempfile::tempdir().unwrap();
    let dev = tch::Device::Cpu;
    let mut sink = Collect::default();
    let settings = EngineSettings {
        fixed_batch: true,
        ..two_epochs(d.path())
    };
    let summary = {
        let mut e = Engine::new(Linear::new(), &dev, settings, Box::new(&mut sink)).unwrap();
        // Every batch after the first is an error: only the first may be read.
        let train = FailsAt {
            inner: loader(16),
            bad: 1,
        };
        e.fit(&train, None).unwrap()
    };
    assert_eq!(summary.steps, 8, "2 epochs x 4 steps, all on batch 0");
    let losses: Vec<f64> = sink
        .lines
        .iter()
        .filter_map(|(_, _, m)| m.iter().find(|(k, _)| k == "train.loss").map(|(_, v)| *v))
        .collect();
    assert_eq!(losses.len(), 8);
    assert!(
        losses[7] < 0.5 * losses[0],
        "one batch, trained on 8 times, is fitted: {losses:?}"
    );
}
