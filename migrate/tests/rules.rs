//! The per-file transform on the shapes real code has: import placement, indentation,
//! line endings, quoting, and no-ops on code that is already ported.

use migrate::{migrate_text, FileKind};

fn py(src: &str) -> String {
    migrate_text(src, FileKind::Python).text
}

#[test]
fn import_goes_after_a_parenthesised_multiline_import() {
    let src = "from torch import (\n    nn,\n    optim,\n)\nx = y.cuda()\n";
    assert_eq!(
        py(src),
        "from torch import (\n    nn,\n    optim,\n)\nimport torch_sdaa  # noqa: F401\nx = y.sdaa()\n"
    );
}

#[test]
fn import_keeps_indentation_and_backslash_continuations() {
    let src =
        "try:\n    import torch, \\\n        numpy\nexcept ImportError:\n    pass\nd = 'cuda'\n";
    assert_eq!(
        py(src),
        "try:\n    import torch, \\\n        numpy\n    import torch_sdaa  # noqa: F401\nexcept ImportError:\n    pass\nd = 'sdaa'\n"
    );
}

#[test]
fn crlf_line_endings_are_kept() {
    let src = "import torch\r\nx = t.cuda()\r\n";
    assert_eq!(
        py(src),
        "import torch\r\nimport torch_sdaa  # noqa: F401\r\nx = t.sdaa()\r\n"
    );
}

#[test]
fn ported_code_and_unrelated_strings_are_left_alone() {
    let ported = "import torch\nimport torch_sdaa\nx = t.sdaa()\nd = torch.device('sdaa:0')\n";
    let out = migrate_text(ported, FileKind::Python);
    assert_eq!(out.text, ported);
    assert!(out.rewrites.is_empty());
    // Mismatched quotes are not a device string; `cudart`-like words are not `.cuda(`.
    let src = "s = \"cuda' + x\nname = 'cudagraph'\nv = obj.cuda_ok\n";
    assert_eq!(py(src), src);
}

#[test]
fn module_without_torch_import_is_reported_not_guessed() {
    let out = migrate_text("def f(x):\n    return x.cuda()\n", FileKind::Python);
    assert_eq!(out.text, "def f(x):\n    return x.sdaa()\n");
    assert_eq!(out.notes.len(), 1);
    assert_eq!(out.notes[0].rule, "import-torch-sdaa");
}

#[test]
fn string_device_forms() {
    assert_eq!(
        py("import torch\na = torch.device(\"cuda\", 1)\nb = f'cuda:{rank}'\nc = 'cuda:0'\n"),
        "import torch\nimport torch_sdaa  # noqa: F401\na = torch.device(\"sdaa\", 1)\nb = f'sdaa:{rank}'\nc = 'sdaa:0'\n"
    );
    assert_eq!(
        py("import torch\ndist.init_process_group(\"nccl\")\nb = 'gloo' if cpu else 'nccl'\n"),
        "import torch\nimport torch_sdaa  # noqa: F401\ndist.init_process_group(\"tccl\")\nb = 'gloo' if cpu else 'tccl'\n"
    );
}

#[test]
fn apex_amp_block_that_is_not_a_single_backward_is_reported() {
    let src = "import torch\nfrom apex import amp\nwith amp.scale_loss(loss, opt) as s:\n    s.backward()\n    log(s)\nopt.step()\n";
    let out = migrate_text(src, FileKind::Python);
    assert!(
        out.text.contains("with amp.scale_loss(loss, opt) as s:"),
        "{}",
        out.text
    );
    assert!(out.text.contains("\nopt.step()\n"), "{}", out.text);
    assert!(out
        .notes
        .iter()
        .any(|n| n.rule == "apex-manual" && n.line == 3));
}

#[test]
fn shell_scripts_get_env_and_device_flags() {
    let out = migrate_text(
        "export CUDA_VISIBLE_DEVICES=0\npython run.py --device=cuda --nccl\n",
        FileKind::Shell,
    );
    assert_eq!(
        out.text,
        "export SDAA_VISIBLE_DEVICES=0\npython run.py --device=sdaa --nccl\n"
    );
}

#[test]
fn every_rule_id_is_unique_and_listed() {
    let mut ids: Vec<&str> = migrate::RULES.iter().map(|r| r.id).collect();
    let n = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), n);
    let listing = migrate::render_rules();
    for r in migrate::RULES {
        assert!(listing.contains(r.id));
    }
}
