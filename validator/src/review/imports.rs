//! imports.local: every module a Python file of the directory imports resolves to something.
//!
//! A relative import (`from .x import y`) must resolve to a file or package next to it. An
//! absolute one (`import datautils`) resolves to a module or package anywhere in the directory
//! (scripts put their own directories on `sys.path`), the standard library, a requirements
//! file (any in the tree, `git+…/name.git` by its repository name), a `pip`/`mim install` the
//! README, a script or the Dockerfile runs, or a package of the stacks ModelZoo models use
//! (the SDAA environment's torch / torch_sdaa, OpenMMLab, Hugging Face, …). An import inside a
//! `try:` block is optional and not checked.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use regex::Regex;

use super::files::read_text;
use super::requirements::{dist_name, is_requirements};
use super::Context;
use crate::finding::Finding;

/// Most Python files read per model directory.
const MAX_PY_FILES: usize = 5_000;

/// Python 3.11's `sys.stdlib_module_names` (public ones) plus `__future__`.
const STDLIB: &[&str] = &[
    "__future__",
    "_thread",
    "abc",
    "aifc",
    "argparse",
    "array",
    "ast",
    "asynchat",
    "asyncio",
    "asyncore",
    "atexit",
    "audioop",
    "base64",
    "bdb",
    "binascii",
    "bisect",
    "builtins",
    "bz2",
    "cProfile",
    "calendar",
    "cgi",
    "cgitb",
    "chunk",
    "cmath",
    "cmd",
    "code",
    "codecs",
    "codeop",
    "collections",
    "colorsys",
    "compileall",
    "concurrent",
    "configparser",
    "contextlib",
    "contextvars",
    "copy",
    "copyreg",
    "crypt",
    "csv",
    "ctypes",
    "curses",
    "dataclasses",
    "datetime",
    "dbm",
    "decimal",
    "difflib",
    "dis",
    "distutils",
    "doctest",
    "email",
    "encodings",
    "ensurepip",
    "enum",
    "errno",
    "faulthandler",
    "fcntl",
    "filecmp",
    "fileinput",
    "fnmatch",
    "fractions",
    "ftplib",
    "functools",
    "gc",
    "genericpath",
    "getopt",
    "getpass",
    "gettext",
    "glob",
    "graphlib",
    "grp",
    "gzip",
    "hashlib",
    "heapq",
    "hmac",
    "html",
    "http",
    "idlelib",
    "imaplib",
    "imghdr",
    "imp",
    "importlib",
    "inspect",
    "io",
    "ipaddress",
    "itertools",
    "json",
    "keyword",
    "lib2to3",
    "linecache",
    "locale",
    "logging",
    "lzma",
    "mailbox",
    "mailcap",
    "marshal",
    "math",
    "mimetypes",
    "mmap",
    "modulefinder",
    "msilib",
    "msvcrt",
    "multiprocessing",
    "netrc",
    "nis",
    "nntplib",
    "nt",
    "ntpath",
    "nturl2path",
    "numbers",
    "opcode",
    "operator",
    "optparse",
    "os",
    "ossaudiodev",
    "pathlib",
    "pdb",
    "pickle",
    "pickletools",
    "pipes",
    "pkgutil",
    "platform",
    "plistlib",
    "poplib",
    "posix",
    "posixpath",
    "pprint",
    "profile",
    "pstats",
    "pty",
    "pwd",
    "py_compile",
    "pyclbr",
    "pydoc",
    "pydoc_data",
    "pyexpat",
    "queue",
    "quopri",
    "random",
    "re",
    "readline",
    "reprlib",
    "resource",
    "rlcompleter",
    "runpy",
    "sched",
    "secrets",
    "select",
    "selectors",
    "shelve",
    "shlex",
    "shutil",
    "signal",
    "site",
    "smtpd",
    "smtplib",
    "sndhdr",
    "socket",
    "socketserver",
    "spwd",
    "sqlite3",
    "sre_compile",
    "sre_constants",
    "sre_parse",
    "ssl",
    "stat",
    "statistics",
    "string",
    "stringprep",
    "struct",
    "subprocess",
    "sunau",
    "symtable",
    "sys",
    "sysconfig",
    "syslog",
    "tabnanny",
    "tarfile",
    "telnetlib",
    "tempfile",
    "termios",
    "textwrap",
    "this",
    "threading",
    "time",
    "timeit",
    "tkinter",
    "token",
    "tokenize",
    "tomllib",
    "trace",
    "traceback",
    "tracemalloc",
    "tty",
    "turtle",
    "turtledemo",
    "types",
    "typing",
    "unicodedata",
    "unittest",
    "urllib",
    "uu",
    "uuid",
    "venv",
    "warnings",
    "wave",
    "weakref",
    "webbrowser",
    "winreg",
    "winsound",
    "wsgiref",
    "xdrlib",
    "xml",
    "xmlrpc",
    "zipapp",
    "zipfile",
    "zipimport",
    "zlib",
    "zoneinfo",
];

/// Packages of the SDAA environment and of the stacks ModelZoo models are built on (import
/// names, lower case). Not a judgement that they are installed: only that an import of one is
/// a third-party import, not a local module gone missing.
const KNOWN_PACKAGES: &[&str] = &[
    // The SDAA environment and PyTorch.
    "torch",
    "torch_sdaa",
    "torchvision",
    "torchaudio",
    "torchtext",
    "torchdata",
    "tcap_dllogger",
    "dllogger",
    "apex",
    "triton",
    "torchmetrics",
    "pytorch_lightning",
    "lightning",
    "functorch",
    // Scientific Python.
    "numpy",
    "scipy",
    "pandas",
    "matplotlib",
    "seaborn",
    "sympy",
    "networkx",
    "numba",
    "cython",
    "pil",
    "cv2",
    "skimage",
    "sklearn",
    "imageio",
    "h5py",
    "lmdb",
    "pyarrow",
    "tables",
    "xarray",
    "statsmodels",
    "joblib",
    // OpenMMLab.
    "mmcv",
    "mmengine",
    "mmdet",
    "mmseg",
    "mmpretrain",
    "mmcls",
    "mmaction",
    "mmpose",
    "mmocr",
    "mmrotate",
    "mmtrack",
    "mmdet3d",
    "mmflow",
    "mmedit",
    "mmagic",
    "mmyolo",
    "mmfewshot",
    "mmselfsup",
    "mmrazor",
    "mmdeploy",
    "mim",
    // Hugging Face and friends.
    "transformers",
    "datasets",
    "evaluate",
    "accelerate",
    "peft",
    "tokenizers",
    "sentencepiece",
    "safetensors",
    "huggingface_hub",
    "diffusers",
    "trl",
    "deepspeed",
    "fairscale",
    "timm",
    "einops",
    "open_clip",
    "clip",
    "xformers",
    "flash_attn",
    "bitsandbytes",
    // Detection / segmentation / vision tools.
    "pycocotools",
    "lvis",
    "cityscapesscripts",
    "shapely",
    "pyclipper",
    "imgaug",
    "albumentations",
    "kornia",
    "fvcore",
    "iopath",
    "detectron2",
    "thop",
    "ptflops",
    "pytorchvideo",
    "decord",
    "av",
    "ffmpeg",
    "trimesh",
    "open3d",
    "plyfile",
    // Logging, config, CLI.
    "tensorboard",
    "tensorboardx",
    "wandb",
    "visualdl",
    "mlflow",
    "termcolor",
    "tabulate",
    "easydict",
    "addict",
    "yapf",
    "prettytable",
    "rich",
    "click",
    "fire",
    "absl",
    "omegaconf",
    "hydra",
    "ml_collections",
    "yaml",
    "tqdm",
    "loguru",
    "colorama",
    "coloredlogs",
    // Text and audio.
    "jieba",
    "nltk",
    "spacy",
    "regex",
    "ftfy",
    "bs4",
    "lxml",
    "jsonlines",
    "ujson",
    "orjson",
    "simplejson",
    "msgpack",
    "soundfile",
    "librosa",
    "scipy",
    "sacrebleu",
    "sacremoses",
    "rouge_score",
    "rouge",
    "editdistance",
    "levenshtein",
    "unidecode",
    "emoji",
    "tiktoken",
    "paddle",
    "paddlenlp",
    "paddleseg",
    "paddledet",
    "x2paddle",
    "onnx",
    "onnxruntime",
    // General purpose.
    "requests",
    "six",
    "packaging",
    "setuptools",
    "pkg_resources",
    "wheel",
    "pip",
    "psutil",
    "pynvml",
    "gputil",
    "filelock",
    "fsspec",
    "dill",
    "multiprocess",
    "xxhash",
    "protobuf",
    "google",
    "grpc",
    "attr",
    "attrs",
    "dateutil",
    "pytz",
    "ipython",
    "ipdb",
    "jupyter",
    "pytest",
    "gdown",
    "wget",
    "pydantic",
    "typing_extensions",
    "cloudpickle",
    "zmq",
    "redis",
    "boto3",
    "botocore",
    "oss2",
    "jsonschema",
    "toml",
    "tomli",
    "future",
    "past",
    "mock",
    "pycuda",
    "cupy",
    "faiss",
    "annoy",
    "pyyaml",
    "ruamel",
    "markdown",
    "jinja2",
    "cffi",
];

/// Import names whose distribution is spelt otherwise (import → distribution).
const DIST_OF: &[(&str, &str)] = &[
    ("cv2", "opencv-python"),
    ("cv2", "opencv-python-headless"),
    ("cv2", "opencv-contrib-python"),
    ("pil", "pillow"),
    ("yaml", "pyyaml"),
    ("sklearn", "scikit-learn"),
    ("skimage", "scikit-image"),
    ("bs4", "beautifulsoup4"),
    ("attr", "attrs"),
    ("dateutil", "python-dateutil"),
    ("mmcv", "mmcv-full"),
    ("tensorboardx", "tensorboardx"),
];

fn normalise(name: &str) -> String {
    name.to_lowercase().replace('-', "_")
}

/// The names a text installs: `pip install a b`, `mim install c`, `git+…/name.git`.
fn installed_names(text: &str, into: &mut HashSet<String>) {
    static PIP: OnceLock<Regex> = OnceLock::new();
    static GIT: OnceLock<Regex> = OnceLock::new();
    let pip = PIP.get_or_init(|| {
        Regex::new(r"(?:pip3?|mim|python3? -m pip) install ([^\n&;|#]+)").expect("valid regex")
    });
    let git = GIT.get_or_init(|| {
        Regex::new(r"git\+[^\s#]+/([A-Za-z0-9_.\-]+?)(?:\.git)?(?:[@#][^\s]*)?(?:\s|$)")
            .expect("valid regex")
    });
    for c in pip.captures_iter(text) {
        for w in c[1].split_whitespace() {
            if w.starts_with('-') || w.contains('/') || w == "." {
                continue;
            }
            let name = dist_name(w.trim_matches(|c| c == '"' || c == '\''));
            if !name.is_empty() {
                into.insert(normalise(&name));
            }
        }
    }
    for c in git.captures_iter(text) {
        into.insert(normalise(&c[1]));
    }
}

/// What the requirements and install commands provide, looked up in constant time per import
/// (issue #38 C11: scanning every distribution for each import made `validate` quadratic —
/// 4,000 imports against 4,000 requirements took seconds, 100k never finished).
struct Provided {
    /// Every distribution, normalised.
    dists: HashSet<String>,
    /// Every part of a distribution's name before one of its `_` (`mmcv_full` → `mmcv`): a
    /// package named after that part is provided by it.
    prefixes: HashSet<String>,
}

impl Provided {
    fn new(dists: HashSet<String>) -> Provided {
        let prefixes = dists
            .iter()
            .flat_map(|d| d.match_indices('_').map(move |(at, _)| d[..at].to_string()))
            .collect();
        Provided { dists, prefixes }
    }

    /// Whether `name` (an import's top level) is provided by one of the distributions.
    fn provides(&self, name: &str) -> bool {
        let n = normalise(name);
        self.dists.contains(&n)
            || DIST_OF
                .iter()
                .any(|(i, d)| *i == n && self.dists.contains(&normalise(d)))
            || self.prefixes.contains(&n)
    }
}

/// One import statement: its line, the module as written, the level of a relative import
/// (dots), the names of `from . import a, b`.
#[derive(Debug, PartialEq)]
struct Import {
    line: usize,
    module: String,
    level: usize,
    names: Vec<String>,
    text: String,
}

/// The imports of a Python source outside strings and `try:` blocks.
fn imports(text: &str) -> Vec<Import> {
    static IMPORT: OnceLock<Regex> = OnceLock::new();
    static FROM: OnceLock<Regex> = OnceLock::new();
    let import = IMPORT.get_or_init(|| {
        Regex::new(r"^import\s+([A-Za-z_][\w.]*(?:\s+as\s+\w+)?(?:\s*,\s*[A-Za-z_][\w.]*(?:\s+as\s+\w+)?)*)\s*(?:#.*)?$")
            .expect("valid regex")
    });
    let from = FROM.get_or_init(|| {
        Regex::new(r"^from\s+(\.*)([A-Za-z_][\w.]*)?\s+import\s+\(?\s*([^#]*)")
            .expect("valid regex")
    });
    let mut out = Vec::new();
    let mut in_string: Option<&str> = None;
    let mut try_indent: Option<usize> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        let indent = line.len() - line.trim_start().len();
        let t = line.trim_start();
        if let Some(q) = in_string {
            if t.matches(q).count() % 2 == 1 {
                in_string = None;
            }
            continue;
        }
        for q in ["\"\"\"", "'''"] {
            if t.matches(q).count() % 2 == 1 {
                in_string = Some(q);
            }
        }
        if in_string.is_some() || t.is_empty() || t.starts_with('#') {
            continue;
        }
        // `try:` and `except ...:` bodies hold optional imports and their fallbacks.
        let opens_optional = t.starts_with("try:") || t.starts_with("except");
        if let Some(ti) = try_indent {
            if indent > ti {
                continue;
            }
            try_indent = None;
        }
        if opens_optional && t.ends_with(':') {
            try_indent = Some(indent);
            continue;
        }
        if let Some(c) = import.captures(t) {
            for part in c[1].split(',') {
                let module = part.split_whitespace().next().unwrap_or("").to_string();
                out.push(Import {
                    line: i + 1,
                    module,
                    level: 0,
                    names: Vec::new(),
                    text: t.to_string(),
                });
            }
        } else if let Some(c) = from.captures(t) {
            let level = c[1].len();
            let module = c.get(2).map(|m| m.as_str().to_string()).unwrap_or_default();
            let names = c[3]
                .split(',')
                .filter_map(|n| n.split_whitespace().next())
                .map(|n| {
                    n.trim_matches(|c| c == '(' || c == ')' || c == '\\')
                        .to_string()
                })
                .filter(|n| !n.is_empty())
                .collect();
            if module == "__future__" {
                continue;
            }
            out.push(Import {
                line: i + 1,
                module,
                level,
                names,
                text: t.to_string(),
            });
        }
    }
    out
}

pub(super) fn check(ctx: &Context, out: &mut Vec<Finding>) {
    // What the directory provides: every module file and package name in it.
    let mut local: HashSet<String> = HashSet::new();
    for e in &ctx.tree.entries {
        let name = e.name();
        if e.is_dir {
            local.insert(name);
        } else if let Some(stem) = name
            .strip_suffix(".py")
            .or_else(|| name.strip_suffix(".pyx"))
            .or_else(|| name.split_once(".cpython").map(|(s, _)| s))
            .or_else(|| name.strip_suffix(".so"))
        {
            local.insert(stem.to_string());
        }
    }
    // What its requirements and install commands provide.
    let mut dists: HashSet<String> = HashSet::new();
    for e in ctx.tree.files() {
        let name = e.name();
        let under_requirements = e
            .rel
            .parent()
            .and_then(|p| p.file_name())
            .is_some_and(|p| p == "requirements");
        if is_requirements(&name) || (under_requirements && name.ends_with(".txt")) {
            if let Some(text) = read_text(&ctx.dir.join(&e.rel)) {
                for line in text.lines() {
                    let spec = line.split('#').next().unwrap_or("").trim();
                    if spec.is_empty() {
                        continue;
                    }
                    installed_names(&format!("pip install {spec}\n"), &mut dists);
                    if spec.starts_with("git+") {
                        installed_names(&format!("{spec}\n"), &mut dists);
                    }
                }
            }
        } else if name == "Dockerfile" || name == "setup.py" || name.ends_with(".sh") {
            if let Some(text) = read_text(&ctx.dir.join(&e.rel)) {
                installed_names(&text, &mut dists);
            }
        }
    }
    if let Some((_, text)) = &ctx.readme {
        installed_names(text, &mut dists);
    }
    let provided = Provided::new(dists);

    let mut reported: HashSet<String> = HashSet::new();
    for e in ctx
        .tree
        .files()
        .filter(|e| e.name().ends_with(".py"))
        .take(MAX_PY_FILES)
    {
        let path = ctx.dir.join(&e.rel);
        let Some(text) = read_text(&path) else {
            continue;
        };
        let file_dir = e.rel.parent().map(Path::to_path_buf).unwrap_or_default();
        for imp in imports(&text) {
            let missing = if imp.level > 0 {
                relative_missing(ctx, &file_dir, &imp)
            } else {
                let top = imp.module.split('.').next().unwrap_or("");
                let known = STDLIB.contains(&top)
                    || KNOWN_PACKAGES.contains(&top.to_lowercase().as_str())
                    || local.contains(top)
                    || provided.provides(top);
                (!known && !top.is_empty()).then(|| {
                    format!(
                        "no `{top}.py` or `{top}/` anywhere in the directory, and `{top}` is in no requirements file, install command or standard library"
                    )
                })
            };
            let Some(why) = missing else {
                continue;
            };
            let key = format!("{}:{}", e.rel.display(), imp.module);
            if !reported.insert(key) {
                continue;
            }
            out.push(ctx.finding(
                &path,
                Some(imp.line),
                "imports.local",
                format!(
                    "`{}`: {why} — the model cannot run: add the module to the directory (or its package to requirements.txt)",
                    imp.text
                ),
            ));
        }
    }
}

/// Why a relative import resolves to nothing, if it does not.
fn relative_missing(ctx: &Context, file_dir: &Path, imp: &Import) -> Option<String> {
    let mut base: PathBuf = file_dir.to_path_buf();
    for _ in 1..imp.level {
        if !base.pop() {
            // Above the model directory: not ours to judge.
            return None;
        }
    }
    let module_path: PathBuf = imp.module.split('.').filter(|s| !s.is_empty()).collect();
    let target = base.join(&module_path);
    let exists = |rel: &Path| ctx.dir.join(rel).exists();
    if imp.module.is_empty() {
        // `from . import a, b`: each a module here, or a name the package's __init__ defines.
        if exists(&base.join("__init__.py")) {
            return None;
        }
        let absent: Vec<&String> = imp
            .names
            .iter()
            .filter(|n| !exists(&base.join(format!("{n}.py"))) && !exists(&base.join(n.as_str())))
            .collect();
        return (!absent.is_empty()).then(|| {
            format!(
                "no `{}` next to it (in {}/)",
                absent
                    .iter()
                    .map(|n| format!("{n}.py"))
                    .collect::<Vec<_>>()
                    .join("`, `"),
                base.display()
            )
        });
    }
    let file = target.with_extension("py");
    if exists(&file) || exists(&target) {
        return None;
    }
    Some(format!(
        "neither `{}` nor `{}/` exists",
        file.display(),
        target.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_outside_strings_and_try() {
        let src = "import os, sys as s\nfrom datautils import X\n\"\"\"\nimport ghost\n\"\"\"\ntry:\n    import torch_sdaa\nexcept ImportError:\n    pass\nfrom .models import (a,\n  b)\nfrom . import c, d\n";
        let got: Vec<(usize, String, usize)> = imports(src)
            .into_iter()
            .map(|i| (i.line, i.module, i.level))
            .collect();
        assert_eq!(
            got,
            vec![
                (1, "os".into(), 0),
                (1, "sys".into(), 0),
                (2, "datautils".into(), 0),
                (10, "models".into(), 1),
                (12, String::new(), 1),
            ]
        );
        assert_eq!(imports(src)[4].names, vec!["c", "d"]);
    }

    #[test]
    fn install_names() {
        let mut d = HashSet::new();
        installed_names(
            "pip3 install -U openmim opencv_python==4.7\npip install git+https://gitee.com/x/mmengine_sdaa.git\nmim install mmcv\ngit+https://github.com/Tecorigin/tcap_dllogger.git\n",
            &mut d,
        );
        for n in [
            "openmim",
            "opencv_python",
            "mmengine_sdaa",
            "mmcv",
            "tcap_dllogger",
        ] {
            assert!(d.contains(n), "{n}: {d:?}");
        }
        let p = Provided::new(d);
        assert!(p.provides("cv2"));
        assert!(p.provides("mmengine"));
        assert!(p.provides("tcap"), "a part before `_` is provided");
        assert!(!p.provides("mmengine_sd"), "only whole parts before a `_`");
        assert!(!p.provides("opencv_python_x"));
    }
}
