//! Fuzzing the Python lexer and the rules (issue #28): CUDA scripts from tests/fuzz_corpus/
//! mutated — broken strings, cut-off blocks, stray bytes — must migrate (or be reported) without
//! a panic or a hang, and the lexer's view keeps the text's length.

use std::path::Path;
use std::time::Duration;

use migrate::{migrate_text, pysrc, FileKind};
use modelzoo_testkit::fuzz::{corpus, mutated, within, CASES};
use proptest::prelude::*;

fn seeds() -> Vec<Vec<u8>> {
    corpus(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_corpus"))
}

fn lex_and_migrate(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let lexed = pysrc::lex(&text);
    for i in 0..text.lines().count() {
        let _ = lexed.code_line(i);
    }
    for kind in [FileKind::Python, FileKind::Shell, FileKind::CudaSource] {
        let _ = migrate_text(&text, kind);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    #[test]
    fn the_lexer_and_rules_never_panic_on_mutated_scripts(input in mutated(seeds())) {
        within(Duration::from_secs(10), input, lex_and_migrate);
    }
}
