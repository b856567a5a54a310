//! The crate README documents every argument of the generated CLI.

#[test]
fn readme_documents_every_argument() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let spec = modelzoo_bert::recipe::spec().unwrap();
    for a in &spec.args {
        assert!(
            readme.contains(&format!("`--{}`", a.name)),
            "README.md lacks --{}",
            a.name
        );
    }
}
