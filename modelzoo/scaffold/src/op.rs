//! `modelzoo op new NAME`: an op library for the sdaa device and the CPU (docs/op.md,
//! "Scaffold"), rendered from `templates/op/` (embedded at build time): C++ registered with
//! `TORCH_LIBRARY(NAME, m)` and kernels for the `CPU`, `PrivateUse1` (sdaa: torch_sdaa's device
//! and the kit's emulator's) and `Autograd` keys, a Python package that builds it with
//! `torch.utils.cpp_extension.load` on first import into its own `.cache/`, the `inputs`
//! module `modelzoo op check` takes, and a unittest test. The example op `NAME.scale_add(x,
//! y, alpha)` works on the CPU; its sdaa kernel is a stub that stops with
//! `NAME: the sdaa kernel is not implemented yet: write it in …` — never a silent
//! pass-through to the reference.
//!
//! Placeholders: `{{name}}` (the library: C++ namespace, Python package, `torch.ops` namespace)
//! and `{{NAME}}` (its upper case, for environment variables).

use std::path::{Path, PathBuf};

use crate::{write_new_files, ScaffoldError};

/// One template file of the op library: its path below the library's directory and its text.
struct OpTemplate {
    path: &'static str,
    text: &'static str,
}

macro_rules! op_template {
    ($path:literal) => {
        OpTemplate {
            path: $path,
            text: include_str!(concat!("../templates/op/", $path)),
        }
    };
}

const OP: &[OpTemplate] = &[
    op_template!("README.md"),
    op_template!("{{name}}/.gitignore"),
    op_template!("{{name}}/__init__.py"),
    op_template!("{{name}}/inputs.py"),
    op_template!("{{name}}/csrc/{{name}}.cpp"),
    op_template!("{{name}}/csrc/kernels.h"),
    op_template!("{{name}}/csrc/cpu.cpp"),
    op_template!("{{name}}/csrc/sdaa.cpp"),
    op_template!("tests/test_{{name}}.py"),
];

/// Names the library cannot take: torch's own op namespaces and device names, and Python
/// modules the package would shadow on `sys.path`.
const RESERVED: &[&str] = &[
    "aten",
    "prim",
    "prims",
    "torch",
    "torchvision",
    "c10",
    "c10d",
    "quantized",
    "sdaa",
    "torch_sdaa",
    "cuda",
    "cpu",
    "mkldnn",
    "profiler",
    "inductor",
    "test",
    "tests",
    "numpy",
    "os",
    "sys",
    "math",
    "random",
    "typing",
    "setuptools",
    "ninja",
    "modelzoo_ops",
];

/// Python and C++ keywords (all lower case): the name is a Python package and a C++ namespace.
const KEYWORDS: &[&str] = &[
    "and",
    "as",
    "assert",
    "async",
    "await",
    "break",
    "class",
    "continue",
    "def",
    "del",
    "elif",
    "else",
    "except",
    "finally",
    "for",
    "from",
    "global",
    "if",
    "import",
    "in",
    "is",
    "lambda",
    "nonlocal",
    "not",
    "or",
    "pass",
    "raise",
    "return",
    "try",
    "while",
    "with",
    "yield",
    "alignas",
    "alignof",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "case",
    "catch",
    "char",
    "compl",
    "concept",
    "const",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "friend",
    "goto",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not_eq",
    "nullptr",
    "operator",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "xor",
    "xor_eq",
];

/// Everything `op new` will create, computed without touching the disk.
#[derive(Debug, Clone)]
pub struct OpPlan {
    /// The library's directory (holds README.md, `<name>/` and `tests/`).
    pub dir: PathBuf,
    /// Files to create: path and content.
    pub files: Vec<(PathBuf, String)>,
}

/// Checks an op library's name: it becomes a Python package, a C++ namespace and the
/// `torch.ops.<name>` namespace, so lower-case letters, digits and `_`, starting with a
/// letter, at most 48 characters, no keyword and none of torch's own namespaces.
pub fn check_op_name(name: &str) -> Result<(), ScaffoldError> {
    let invalid = |rule| {
        Err(ScaffoldError::InvalidOpName {
            name: name.to_string(),
            rule,
        })
    };
    let mut chars = name.chars();
    match chars.next() {
        None => return invalid("it is empty"),
        Some(c) if !c.is_ascii_lowercase() => {
            return invalid("start with a lower-case letter (a-z)")
        }
        _ => {}
    }
    if !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
        return invalid(
            "use lower-case letters, digits and `_` only: it names a Python package, a C++ \
             namespace and torch.ops.<name>",
        );
    }
    if name.len() > 48 {
        return invalid("use at most 48 characters");
    }
    if name.contains("__") {
        return invalid("`__` is reserved in C++ names");
    }
    if KEYWORDS.contains(&name) {
        return invalid("it is a Python or C++ keyword");
    }
    if RESERVED.contains(&name) {
        return invalid(
            "it is one of torch's namespaces or devices, or a Python module the package would \
             shadow",
        );
    }
    Ok(())
}

/// Renders the library `name` into `dir` and checks it can be written: a valid name and no
/// existing file in the way (nothing is ever overwritten).
pub fn plan(name: &str, dir: &Path) -> Result<OpPlan, ScaffoldError> {
    check_op_name(name)?;
    if dir.exists() && !dir.is_dir() {
        return Err(ScaffoldError::Exists {
            paths: vec![dir.to_path_buf()],
        });
    }
    let vars = [
        ("{{name}}", name.to_string()),
        ("{{NAME}}", name.to_ascii_uppercase()),
    ];
    let files: Vec<(PathBuf, String)> = OP
        .iter()
        .map(|t| {
            (
                dir.join(crate::render(t.path, &vars)),
                crate::render(t.text, &vars),
            )
        })
        .collect();
    let existing: Vec<PathBuf> = files
        .iter()
        .map(|(p, _)| p.clone())
        .filter(|p| p.symlink_metadata().is_ok())
        .collect();
    if !existing.is_empty() {
        return Err(ScaffoldError::Exists { paths: existing });
    }
    Ok(OpPlan {
        dir: dir.to_path_buf(),
        files,
    })
}

/// Writes the plan: each file atomically and never over an existing one.
pub fn apply(plan: &OpPlan) -> Result<(), ScaffoldError> {
    write_new_files(&plan.files)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory under the system's temp dir, removed when dropped (the crate has no
    /// dev-dependencies; a test's leftovers from a crash are named by process and test).
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(test: &str) -> TempDir {
            let dir = std::env::temp_dir().join(format!(
                "modelzoo-scaffold-op-{}-{test}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn file<'a>(plan: &'a OpPlan, rel: &str) -> &'a str {
        let path = plan.dir.join(rel);
        plan.files
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, t)| t.as_str())
            .unwrap_or_else(|| panic!("no {rel} in the plan"))
    }

    #[test]
    fn renders_every_file_with_the_name() {
        let t = TempDir::new("renders");
        let dir = t.path().join("lib");
        let plan = plan("deform_ops", &dir).unwrap();
        let mut rels: Vec<String> = plan
            .files
            .iter()
            .map(|(p, _)| p.strip_prefix(&dir).unwrap().display().to_string())
            .collect();
        rels.sort();
        assert_eq!(
            rels,
            [
                "README.md",
                "deform_ops/.gitignore",
                "deform_ops/__init__.py",
                "deform_ops/csrc/cpu.cpp",
                "deform_ops/csrc/deform_ops.cpp",
                "deform_ops/csrc/kernels.h",
                "deform_ops/csrc/sdaa.cpp",
                "deform_ops/inputs.py",
                "tests/test_deform_ops.py",
            ]
        );
        for (path, text) in &plan.files {
            assert!(
                !text.contains("{{"),
                "{} keeps a placeholder",
                path.display()
            );
        }
        let lib = file(&plan, "deform_ops/csrc/deform_ops.cpp");
        for key in ["CPU", "PrivateUse1", "Autograd"] {
            assert!(
                lib.contains(&format!("TORCH_LIBRARY_IMPL(deform_ops, {key}, m)")),
                "{key}"
            );
        }
        assert!(lib.contains("TORCH_LIBRARY(deform_ops, m)"));
        assert!(lib.contains("findSchemaOrThrow(\"deform_ops::scale_add\""));
        let sdaa = file(&plan, "deform_ops/csrc/sdaa.cpp");
        assert!(sdaa.contains(
            "\"deform_ops: the sdaa kernel is not implemented yet: write it in \"\n              \
             \"deform_ops/csrc/sdaa.cpp (scale_add_sdaa)\""
        ));
        let init = file(&plan, "deform_ops/__init__.py");
        assert!(init.contains("cpp_extension.load("));
        assert!(init.contains("os.path.join(_HERE, \".cache\""));
        assert!(init.contains("DEFORM_OPS_VERBOSE_BUILD"));
        assert!(init.contains("torch.ops.deform_ops.scale_add("));
        assert!(file(&plan, "deform_ops/inputs.py").contains("def cases(dtype, device, seed):"));
    }

    #[test]
    fn refuses_bad_names_with_the_rule() {
        let t = TempDir::new("names");
        for (name, rule) in [
            ("", "empty"),
            ("DeformOps", "start with a lower-case"),
            ("2ops", "start with a lower-case"),
            ("deform-ops", "lower-case letters, digits and `_` only"),
            ("a__b", "`__`"),
            ("class", "keyword"),
            ("namespace", "keyword"),
            ("aten", "torch's namespaces"),
            ("torch_sdaa", "torch's namespaces"),
        ] {
            let err = plan(name, &t.path().join("x")).unwrap_err().to_string();
            assert!(err.contains(rule), "{name:?}: {err}");
            assert!(err.starts_with("invalid op library name"), "{err}");
            assert!(err.contains(&format!("`{name}`")), "{err}");
        }
        assert!(plan(&"a".repeat(49), t.path()).is_err());
        assert!(plan("msdeform2_ops", t.path()).is_ok());
    }

    #[test]
    fn never_overwrites_and_writes_the_plan() {
        let t = TempDir::new("overwrite");
        let dir = t.path().join("lib");
        apply(&plan("my_ops", &dir).unwrap()).unwrap();
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        assert!(readme.starts_with("# my_ops\n"));
        assert!(dir.join("my_ops/csrc/sdaa.cpp").is_file());
        // A second scaffold into the same directory names what is in the way.
        std::fs::write(dir.join("README.md"), "mine").unwrap();
        let err = plan("my_ops", &dir).unwrap_err().to_string();
        assert!(err.contains("refusing to overwrite"), "{err}");
        assert!(err.contains("README.md"), "{err}");
        assert_eq!(
            std::fs::read_to_string(dir.join("README.md")).unwrap(),
            "mine"
        );
        // A file where the directory should be.
        let f = t.path().join("file");
        std::fs::write(&f, "x").unwrap();
        assert!(plan("my_ops", &f)
            .unwrap_err()
            .to_string()
            .contains("refusing to overwrite"));
    }
}
