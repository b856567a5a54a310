//! What a log holds, shared by the writer, the line parser and the reader: [`Record`]s, the
//! [`LogFormat`] each came from, and the [`Metadata`] declared for a metric.

/// One logged step: where it happened, which rank logged it, and every numeric value on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub epoch: Option<u64>,
    pub iteration: Option<u64>,
    pub val_iteration: Option<u64>,
    /// The line's `rank` value; 0 when the line has none.
    pub rank: u32,
    /// The step when the line gives it as text instead of numbers: a driver event
    /// (`FINISHED`, `TRAIN_END`) or `Summary`. Those records carry no epoch or iteration.
    pub step_name: Option<String>,
    /// Metric name → value, in line order (`nan`/`inf` kept as such).
    pub metrics: Vec<(String, f64)>,
}

impl Record {
    /// The value of `metric` on this record, if it was logged.
    pub fn get(&self, metric: &str) -> Option<f64> {
        self.metrics
            .iter()
            .find(|(k, _)| k == metric)
            .map(|(_, v)| *v)
    }
}

/// Which parser produced a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LogFormat {
    /// Our JSON stream: `TCAPPDLL {json}` with `data` a JSON object.
    OurJson,
    /// tcap_dllogger's JSON stream: `data` a Python-repr string.
    TcapJson,
    /// tcap_dllogger's stdout lines: `TCAPPDLL <datetime> - Epoch: ... k : v`.
    TcapStdout,
    /// NVIDIA dllogger's `DLLL {json}` lines.
    NvidiaDlll,
    /// A console loss line of a plain script, by the loss-line rule (docs/compare.md):
    /// `Loss: 0.302`, `Loss 7.1e+00 (7.2e+00)`, `| loss  6.76 |`, `Loss_D: 1.2 Loss_G: 3.4`,
    /// a tqdm postfix `loss=0.12`, a dict print `{'loss': 0.1, ...}`. The bare word is the
    /// metric `loss`, other loss names as printed; evaluation lines give `val.<name>`, epoch
    /// averages `train.avg_<name>`. Prefer the other formats when a log has both.
    PlainLoss,
    /// An epoch summary, `Epoch[3]: train_loss 2.53 acc1 33.49 | val_loss 2.50 acc1 33.52 lr
    /// 0.1` (the build-in models of the public ModelZoo): the epoch is the step; a name after
    /// `|` that the part before it already has is the validation value, named `val_<name>`.
    EpochSummary,
    /// A detection training log's line (docs/compare.md, "Detection logs"): torchvision's /
    /// DETR's `MetricLogger` (`Epoch: [0]  [ 10/118]  eta: …  loss: 34.5 (35.1)  loss_ce: …`,
    /// the window's median as `train.loss`, the global step as the iteration) and its
    /// `Averaged stats:`, mmdetection 2.x / 3.x (`Epoch [1][50/500]\tlr: …, loss: 1.8`,
    /// `Epoch(val) [1][500]\tbbox_mAP: 0.374`), pycocotools' summary rows (`val.mAP`, `val.AP50`,
    /// `val.segm_mAP`, …).
    Detection,
    /// A CSV row under a header naming a step column (`step,loss` then `1,0.0288`); the
    /// reader keeps the header, so [`crate::parse_line`] alone never yields this format.
    Csv,
}

/// What a metric means, written once as a METADATA record (`unit`, `format`, `GOAL`, `STAGE`).
/// The stdout backend appends `unit` after each value of the metric (`imgs/s`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata {
    pub unit: Option<String>,
    pub format: Option<String>,
    pub goal: Option<String>,
    pub stage: Option<String>,
}

impl Metadata {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn with_unit(mut self, unit: impl Into<String>) -> Self {
        self.unit = Some(unit.into());
        self
    }
    pub fn with_format(mut self, format: impl Into<String>) -> Self {
        self.format = Some(format.into());
        self
    }
    pub fn with_goal(mut self, goal: impl Into<String>) -> Self {
        self.goal = Some(goal.into());
        self
    }
    pub fn with_stage(mut self, stage: impl Into<String>) -> Self {
        self.stage = Some(stage.into());
        self
    }
}
