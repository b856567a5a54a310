//! The house rules of this repository's own source (issue #41): no import circle between the
//! top-level modules of a crate or the modules of a Python package, and no source file over
//! [`MAX_LINES`] lines. Pure file scanning, so it costs milliseconds; it lives here because
//! validator's test binary does not link libtorch.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The longest a source file may be: past it a file holds several concerns, split it by them.
const MAX_LINES: usize = 900;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("validator sits in the repository root")
        .to_path_buf()
}

/// Every file under `dir` ending in one of `exts`, outside build outputs, virtual environments
/// and hidden directories.
fn sources(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let walk = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            let n = e.file_name().to_string_lossy();
            e.depth() == 0
                || !(n.starts_with('.')
                    || n == "target"
                    || n == "node_modules"
                    || n == "__pycache__"
                    || (e.depth() == 1 && n == "out"))
        });
    for e in walk.flatten() {
        let n = e.file_name().to_string_lossy();
        if e.file_type().is_file() && exts.iter().any(|x| n.ends_with(x)) {
            out.push(e.into_path());
        }
    }
    out
}

/// The code of a Rust file that is not a comment, up to its first `#[cfg(test)]` (test modules
/// may reach anywhere in their crate).
fn rust_code(text: &str) -> String {
    let mut code = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]") {
            break;
        }
        if t.starts_with("//") {
            continue;
        }
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// The top-level modules of a crate's `src/` (`foo.rs` or `foo/`), each with its files.
fn rust_modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut modules: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    let Ok(entries) = fs::read_dir(src) else {
        return modules;
    };
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            modules
                .entry(name)
                .or_default()
                .extend(sources(&path, &[".rs"]));
        } else if let Some(stem) = name.strip_suffix(".rs") {
            if !matches!(stem, "lib" | "main") {
                modules.entry(stem.to_string()).or_default().push(path);
            }
        }
    }
    modules
}

/// Which top-level modules each module names through `crate::<module>`.
fn rust_edges(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let modules = rust_modules(src);
    let names: BTreeSet<&String> = modules.keys().collect();
    let pat = regex::Regex::new(r"\bcrate::([a-z_][a-z0-9_]*)").unwrap();
    let group = regex::Regex::new(r"\bcrate::\{([^}]*)\}").unwrap();
    let mut edges = BTreeMap::new();
    for (module, files) in &modules {
        let mut to = BTreeSet::new();
        for f in files {
            let code = rust_code(&fs::read_to_string(f).unwrap_or_default());
            let mut named: Vec<String> = pat.captures_iter(&code).map(|c| c[1].into()).collect();
            for c in group.captures_iter(&code) {
                named.extend(c[1].split(',').filter_map(|part| {
                    let first = part.trim().split("::").next()?.trim();
                    (!first.is_empty()).then(|| first.to_string())
                }));
            }
            to.extend(
                named
                    .into_iter()
                    .filter(|n| n != module && names.contains(n)),
            );
        }
        edges.insert(module.clone(), to);
    }
    edges
}

/// Which sibling modules each module of a Python package imports: `from . import a, b`,
/// `from .a import x`, `import pkg.a` is not looked at (the packages import relatively), and
/// imports inside functions count as much as those at the top.
fn python_edges(package: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let from_dot =
        regex::Regex::new(r"^\s*from\s+\.([A-Za-z_][A-Za-z0-9_]*)?\s+import\s+(.*)$").unwrap();
    let mut edges = BTreeMap::new();
    let Ok(entries) = fs::read_dir(package) else {
        return edges;
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .collect();
    files.sort();
    let names: BTreeSet<String> = files
        .iter()
        .filter_map(|p| Some(p.file_stem()?.to_string_lossy().into_owned()))
        .collect();
    for f in &files {
        let module = f.file_stem().unwrap().to_string_lossy().into_owned();
        let mut to = BTreeSet::new();
        for line in fs::read_to_string(f).unwrap_or_default().lines() {
            let Some(c) = from_dot.captures(line) else {
                continue;
            };
            match c.get(1) {
                Some(m) => {
                    to.insert(m.as_str().to_string());
                }
                None => to.extend(
                    c[2].trim_matches(|ch: char| ch == '(' || ch.is_whitespace())
                        .split('#')
                        .next()
                        .unwrap_or("")
                        .split(',')
                        .filter_map(|n| n.split_whitespace().next())
                        .map(|n| n.trim_matches(|ch| ch == '(' || ch == ')').to_string()),
                ),
            }
        }
        to.retain(|n| *n != module && names.contains(n));
        edges.insert(module, to);
    }
    edges
}

/// The circles of a graph, each as its modules in order from its smallest name (`a -> b -> a`),
/// found from every module by depth-first search.
fn circles(edges: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<Vec<String>> {
    fn walk(
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        seen: &mut BTreeSet<String>,
        found: &mut BTreeSet<Vec<String>>,
    ) {
        let here = path.last().unwrap().clone();
        for next in edges.get(&here).into_iter().flatten() {
            if let Some(at) = path.iter().position(|p| p == next) {
                let mut circle: Vec<String> = path[at..].to_vec();
                let min = circle
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, n)| *n)
                    .map(|(i, _)| i)
                    .unwrap();
                circle.rotate_left(min);
                found.insert(circle);
            } else if seen.insert(next.clone()) {
                path.push(next.clone());
                walk(edges, path, seen, found);
                path.pop();
            }
        }
    }
    let mut found = BTreeSet::new();
    for start in edges.keys() {
        let mut seen = BTreeSet::from([start.clone()]);
        walk(edges, &mut vec![start.clone()], &mut seen, &mut found);
    }
    found
}

fn show(circles: &BTreeSet<Vec<String>>) -> Vec<String> {
    circles
        .iter()
        .map(|c| format!("{} -> {}", c.join(" -> "), c[0]))
        .collect()
}

/// The workspace's crates: directories holding a Cargo.toml and a src/.
fn crates(root: &Path) -> Vec<PathBuf> {
    sources(root, &["Cargo.toml"])
        .into_iter()
        .filter_map(|t| t.parent().map(Path::to_path_buf))
        .filter(|d| d.join("src").is_dir())
        .collect()
}

#[test]
fn no_crate_has_an_import_circle_between_its_top_level_modules() {
    let root = repo_root();
    let crates = crates(&root);
    assert!(
        crates.len() > 10,
        "found only {} crates under {}",
        crates.len(),
        root.display()
    );
    let mut bad = Vec::new();
    for dir in crates {
        for c in show(&circles(&rust_edges(&dir.join("src")))) {
            bad.push(format!(
                "{}: {c}",
                dir.strip_prefix(&root).unwrap_or(&dir).display()
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "import circles (move what both sides need into a module both import):\n{}",
        bad.join("\n")
    );
}

#[test]
fn no_python_package_has_an_import_circle() {
    let root = repo_root();
    let packages: Vec<PathBuf> = sources(&root.join("python"), &["__init__.py"])
        .into_iter()
        .filter_map(|p| p.parent().map(Path::to_path_buf))
        .collect();
    assert!(
        packages.iter().any(|p| p.ends_with("torch_sdaa")),
        "the emulator's torch_sdaa package was not found under {}",
        root.join("python").display()
    );
    let mut bad = Vec::new();
    for p in packages {
        for c in show(&circles(&python_edges(&p))) {
            bad.push(format!(
                "{}: {c}",
                p.strip_prefix(&root).unwrap_or(&p).display()
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "import circles (move what both sides need into a module both import):\n{}",
        bad.join("\n")
    );
}

#[test]
fn no_source_file_is_over_the_line_limit() {
    let root = repo_root();
    let mut long = Vec::new();
    let mut seen = 0;
    for f in sources(&root, &[".rs", ".py"]) {
        seen += 1;
        let rel = f.strip_prefix(&root).unwrap_or(&f).to_string_lossy();
        let rel = rel.replace('\\', "/");
        let lines = fs::read_to_string(&f).map_or(0, |t| t.lines().count());
        if lines > MAX_LINES {
            long.push(format!("{rel}: {lines} lines"));
        }
    }
    assert!(seen > 100, "found only {seen} source files");
    assert!(
        long.is_empty(),
        "source files over {MAX_LINES} lines (split them by concern):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_scanners_find_what_they_look_for() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    fs::create_dir_all(src.join("a")).unwrap();
    fs::write(src.join("lib.rs"), "mod a;\nmod b;\nmod c;\n").unwrap();
    fs::write(src.join("a/mod.rs"), "mod x;\nuse crate::c::Thing;\n").unwrap();
    fs::write(src.join("a/x.rs"), "// crate::b in a comment\nfn f() {}\n").unwrap();
    fs::write(
        src.join("b.rs"),
        "use crate::{a::Y, c};\n#[cfg(test)]\nmod t { use crate::c; }\n",
    )
    .unwrap();
    fs::write(src.join("c.rs"), "fn g() { crate::b::h(); }\n").unwrap();
    let edges = rust_edges(&src);
    assert_eq!(edges["a"], BTreeSet::from(["c".to_string()]));
    assert_eq!(
        edges["b"],
        BTreeSet::from(["a".to_string(), "c".to_string()])
    );
    assert_eq!(
        show(&circles(&edges)),
        vec!["a -> c -> b -> a".to_string(), "b -> c -> b".to_string()]
    );

    let pkg = dir.path().join("pkg");
    fs::create_dir_all(&pkg).unwrap();
    fs::write(pkg.join("__init__.py"), "from . import _a, _b  # noqa\n").unwrap();
    fs::write(pkg.join("_a.py"), "from ._c import x\n").unwrap();
    fs::write(pkg.join("_b.py"), "import os\n").unwrap();
    fs::write(pkg.join("_c.py"), "def f():\n    from . import _a\n").unwrap();
    let edges = python_edges(&pkg);
    assert_eq!(
        edges["__init__"],
        BTreeSet::from(["_a".to_string(), "_b".to_string()])
    );
    assert_eq!(show(&circles(&edges)), vec!["_a -> _c -> _a".to_string()]);
}
