//! zoo.category: a model directory is filed under the category of its task. The ModelZoo
//! files models as `PyTorch/{contrib,build-in}/<Category>/<Model>`; the public repository has
//! had language models under Classification (distilbert, electra, roberta, bart, QAnything,
//! since moved to NLP), segmentation models under Classification (bisenetv1, fastfcn, unet3d)
//! and TinyLlama under Detection.
//!
//! Only signals that name one task are read, so a false alarm needs a model that is named for
//! another task's family: the model's name (the directory's, or the README's title) being a
//! family of one task (BERT, GPT, LLaMA; YOLO, RetinaNet; UNet, DeepLab, SegFormer), and the
//! run scripts' imports of one task's heads or toolbox (`BertForMaskedLM` from transformers,
//! `mmdet`, `mmseg`). Words a README may use about downstream uses ("a backbone for detection
//! and segmentation") are not signals, nor are backbones every task uses (ResNet, Swin, ViT).
//! Only the categories with a crisp task are judged: Classification, Detection, Segmentation
//! (and Semantic_Segmentation), NLP.

use std::sync::OnceLock;

use regex::Regex;

use super::files::{line_of, read_text};
use super::Context;
use crate::devices::name_words;
use crate::finding::Finding;

/// A task a ModelZoo category stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Task {
    Classification,
    Detection,
    Segmentation,
    Language,
}

impl Task {
    /// What the task is, and the category a model of it is filed under.
    fn words(self) -> (&'static str, &'static str) {
        match self {
            Task::Classification => ("an image classification model", "Classification"),
            Task::Detection => ("an object detection model", "Detection"),
            Task::Segmentation => ("a segmentation model", "Segmentation"),
            Task::Language => ("a language model", "NLP"),
        }
    }
}

/// The task of a category directory's name (`Classification`, `Semantic_Segmentation`, `NLP`);
/// `None` for categories of several tasks (MultiModal, Generative, other, …), never judged.
fn task_of_category(name: &str) -> Option<Task> {
    let n: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_lowercase();
    match n.as_str() {
        "classification" => Some(Task::Classification),
        "detection" => Some(Task::Detection),
        "segmentation" | "semanticsegmentation" => Some(Task::Segmentation),
        "nlp" => Some(Task::Language),
        _ => None,
    }
}

/// Model families that belong to one task: a name word equal to one, or one followed by a
/// version (`yolov4`, `gpt2`, `llama3`, `bisenetv1`, `deeplabv3`, `unet3d`). Families shared by tasks
/// (Mask R-CNN, MaskFormer, DETR's panoptic head, backbones) are left out.
const FAMILIES: &[(Task, &[&str])] = &[
    (
        Task::Language,
        &[
            "bert",
            "roberta",
            "distilbert",
            "electra",
            "albert",
            "spanbert",
            "deberta",
            "xlnet",
            "ernie",
            "bart",
            "mbart",
            "t5",
            "gpt",
            "llama",
            "tinyllama",
            "qwen",
            "chatglm",
            "baichuan",
            "mistral",
        ],
    ),
    (
        Task::Detection,
        &[
            "yolo",
            "yolox",
            "yolof",
            "yoloe",
            "retinanet",
            "fcos",
            "centernet",
            "cornernet",
            "rtmdet",
            "vitdet",
        ],
    ),
    (
        Task::Segmentation,
        &[
            "unet",
            "deeplab",
            "pspnet",
            "segformer",
            "segnet",
            "bisenet",
            "fastfcn",
            "danet",
            "encnet",
            "ddrnet",
            "ocrnet",
            "upernet",
        ],
    ),
];

/// The task whose family `word` names.
fn family_of(word: &str) -> Option<(Task, &'static str)> {
    FAMILIES.iter().find_map(|(task, names)| {
        names
            .iter()
            .find(|f| {
                word.strip_prefix(**f).is_some_and(|rest| {
                    let version = rest.strip_prefix('v').unwrap_or(rest);
                    version.bytes().all(|b| b.is_ascii_digit() || b == b'd')
                })
            })
            .map(|f| (*task, *f))
    })
}

/// Imports in a run script that only one task's models make.
fn code_signal(text: &str) -> Option<(usize, Task, String)> {
    static LM: OnceLock<Regex> = OnceLock::new();
    static MM: OnceLock<Regex> = OnceLock::new();
    // A transformers language-model head: `BertForMaskedLM`, `AutoModelForCausalLM`.
    let lm = LM.get_or_init(|| {
        Regex::new(
            r"(?m)^\s*from\s+transformers\S*\s+import\s+[^\n]*?\b([A-Za-z0-9]+For(?:MaskedLM|CausalLM|Seq2SeqLM|QuestionAnswering|TokenClassification|NextSentencePrediction))\b",
        )
        .expect("valid regex")
    });
    // OpenMMLab's detection and segmentation toolboxes.
    let mm = MM.get_or_init(|| {
        Regex::new(r"(?m)^\s*(?:from|import)\s+(mmdet|mmseg)\b").expect("valid regex")
    });
    let lm_hit = lm.captures(text).map(|c| {
        let m = c.get(1).expect("group");
        (
            line_of(text, m.start()),
            Task::Language,
            format!("imports `{}` from transformers", m.as_str()),
        )
    });
    lm_hit.or_else(|| {
        mm.captures(text).map(|c| {
            let m = c.get(1).expect("group");
            let task = if m.as_str() == "mmdet" {
                Task::Detection
            } else {
                Task::Segmentation
            };
            (
                line_of(text, m.start()),
                task,
                format!("imports `{}`", m.as_str()),
            )
        })
    })
}

/// The words of a name, lowercased: split at punctuation (`bisenetv1`, `tinyllama`) and also
/// at camel case (`TinyLlama` → `tiny`, `llama`).
fn words(name: &str) -> Vec<String> {
    let mut out: Vec<String> = name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    out.extend(name_words(name));
    out
}

/// The README's title: its first `# ` heading.
fn title(text: &str) -> Option<(usize, &str)> {
    text.lines()
        .enumerate()
        .find(|(_, l)| l.starts_with("# "))
        .map(|(i, l)| (i + 1, l[2..].trim()))
}

pub(super) fn check(ctx: &Context, out: &mut Vec<Finding>) {
    let mut up = ctx.dir.ancestors().skip(1);
    let (Some(category), Some(tier)) = (up.next(), up.next()) else {
        return;
    };
    let name = |p: &std::path::Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let (category, tier) = (name(category), name(tier));
    if !matches!(tier.to_lowercase().as_str(), "contrib" | "build-in") {
        return;
    }
    let Some(filed) = task_of_category(&category) else {
        return;
    };
    // Detection and segmentation share their instance-segmentation models (YOLOv8-seg, Mask
    // R-CNN): neither is judged against the other.
    let other = |task: Task| {
        task != filed
            && !matches!(
                (filed, task),
                (Task::Detection, Task::Segmentation) | (Task::Segmentation, Task::Detection)
            )
    };
    let model = name(&ctx.dir);
    // The model's name: the directory's, then the README title's.
    let mut hit = words(&model)
        .iter()
        .find_map(|w| family_of(w).filter(|(t, _)| other(*t)))
        .map(|(task, f)| {
            (
                ctx.dir.clone(),
                None,
                task,
                format!("its name `{model}` names the `{f}` family"),
            )
        });
    if hit.is_none() {
        if let Some((path, text)) = &ctx.readme {
            hit = title(text).and_then(|(line, t)| {
                words(t)
                    .iter()
                    .find_map(|w| family_of(w).filter(|(t, _)| other(*t)))
                    .map(|(task, f)| {
                        (
                            path.clone(),
                            Some(line),
                            task,
                            format!("the README's title names the `{f}` family"),
                        )
                    })
            });
        }
    }
    // The run scripts' imports (top level and run_scripts/, not vendored libraries).
    if hit.is_none() {
        for e in ctx.tree.files() {
            let depth = e.rel.components().count();
            let in_run_scripts = depth == 2
                && e.rel
                    .parent()
                    .is_some_and(|p| p.to_string_lossy().starts_with("run_script"));
            if !e.name().ends_with(".py") || !(depth == 1 || in_run_scripts) {
                continue;
            }
            let path = ctx.dir.join(&e.rel);
            let Some(text) = read_text(&path) else {
                continue;
            };
            if let Some((line, task, what)) = code_signal(&text).filter(|s| other(s.1)) {
                hit = Some((path, Some(line), task, what));
                break;
            }
        }
    }
    if let Some((path, line, task, what)) = hit {
        let (is, belongs) = task.words();
        out.push(ctx.finding(
            &path,
            line,
            "zoo.category",
            format!(
                "filed under {category}, but {what}: it is {is} — a model is filed under its task's category (move it to {belongs}/{model}, where reviewers and users look for it)"
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_and_categories() {
        assert_eq!(family_of("distilbert").map(|f| f.0), Some(Task::Language));
        assert_eq!(family_of("yolov4").map(|f| f.0), Some(Task::Detection));
        assert_eq!(
            family_of("bisenetv1").map(|f| f.0),
            Some(Task::Segmentation)
        );
        assert_eq!(family_of("unet3d").map(|f| f.0), Some(Task::Segmentation));
        assert_eq!(family_of("gpt2").map(|f| f.0), Some(Task::Language));
        assert_eq!(
            family_of("deeplabv3"),
            Some((Task::Segmentation, "deeplab"))
        );
        assert_eq!(family_of("yolox"), Some((Task::Detection, "yolox")));
        // Words that only start like a family are not one.
        assert_eq!(family_of("bertha"), None);
        assert_eq!(family_of("gptq_tools"), None);
        assert_eq!(family_of("resnet50"), None);
        assert_eq!(
            task_of_category("Semantic_Segmentation"),
            Some(Task::Segmentation)
        );
        assert_eq!(task_of_category("MultiModal"), None);
        assert_eq!(
            code_signal(
                "import torch\nfrom transformers import AutoTokenizer, DistilBertForMaskedLM\n"
            )
            .map(|s| (s.0, s.1)),
            Some((2, Task::Language))
        );
        assert_eq!(
            code_signal("from mmseg.apis import train_segmentor\n").map(|s| s.1),
            Some(Task::Segmentation)
        );
        // A tokenizer alone (CLIP, BLIP) or an image head is not a language model's.
        assert_eq!(
            code_signal("from transformers import CLIPTokenizer, ViTForImageClassification\n"),
            None
        );
    }
}
