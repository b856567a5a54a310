//! `validator::diff` on inputs beyond its own dumps: msprobe's dump.json, other .npy dtypes,
//! and every kind of unusable input (each an error naming the problem, never a panic).

mod diff_support;

use std::fs;

use diff_support::{dump, npy, opts, t};
use serde_json::json;
use validator::diff::{self, DiffError, Options};

#[test]
fn msprobe_dump_json_is_read_as_stats_in_file_order() {
    let tmp = tempfile::tempdir().unwrap();
    let entry = |norm: f64| {
        let tensor = |n: f64| {
            json!({"type": "torch.Tensor", "dtype": "torch.float32", "shape": [4, 25],
            "Max": 1.0, "Min": -1.0, "Mean": 0.0, "Norm": n, "requires_grad": true})
        };
        format!(
            r#"{{"task": "statistics", "level": "L1", "framework": "pytorch", "dump_data_dir": null, "data": {{
  "Functional.relu.0.forward": {{"input_args": [{t}], "input_kwargs": {{}}, "output": [{t}]}},
  "Functional.conv2d.0.forward": {{"input_args": [{t}, {{"type": "int", "value": 1}}, {t}], "input_kwargs": {{}}, "output": [{o}]}},
  "Module.layer1.0.conv1.Conv2d.forward.0": {{"input_args": [{t}], "input_kwargs": {{}}, "output": [{t}]}}
}}}}"#,
            t = tensor(10.0),
            o = tensor(norm)
        )
    };
    for (name, norm) in [("a", 10.0), ("b", 12.0)] {
        let dir = tmp.path().join(name).join("step0/rank0");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("dump.json"), entry(norm)).unwrap();
    }
    let d = diff::diff(&opts(&tmp.path().join("a"), &tmp.path().join("b"))).unwrap();
    let keys: Vec<&str> = d.records.iter().map(|r| r.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "Functional.relu.0.forward.input.0",
            "Functional.relu.0.forward.output.0",
            "Functional.conv2d.0.forward.input.0",
            "Functional.conv2d.0.forward.input.2",
            "Functional.conv2d.0.forward.output.0",
            "Module.layer1.0.conv1.Conv2d.forward.0.input.0",
            "Module.layer1.0.conv1.Conv2d.forward.0.output.0",
        ]
    );
    let first = d.first().unwrap();
    assert_eq!((first.op.as_str(), first.call), ("Functional.conv2d", 0));
    assert_eq!(d.records[5].scope, "layer1.0.conv1");
    assert_eq!(d.baseline.framework, "msprobe");
}

#[test]
fn other_npy_dtypes_decode() {
    let tmp = tempfile::tempdir().unwrap();
    let a = dump(
        &tmp.path().join("a"),
        "m",
        1,
        &[t("aten::mul", 0, "forward", "output", &[1.5, -2.0, 0.25])],
    );
    let c = dump(
        &tmp.path().join("c"),
        "m",
        1,
        &[t("aten::mul", 0, "forward", "output", &[0.0, 0.0, 0.0])],
    );
    let file = tmp.path().join("c/rank0/step1/tensors/000000.npy");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "<f8",
            [1.5f64, -2.0, 0.25]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        ),
        (
            "<f2",
            [0x3e00u16, 0xc000, 0x3400]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        ),
    ];
    for (descr, bytes) in cases {
        fs::write(&file, npy(descr, &[3], &bytes)).unwrap();
        let d = diff::diff(&opts(&a, &c)).unwrap();
        assert_eq!(d.records[0].metrics.max_abs, Some(0.0), "{descr}");
    }
    fs::write(
        &file,
        npy(
            "<i8",
            &[3],
            &[1i64, -2, 0]
                .iter()
                .flat_map(|x| x.to_le_bytes())
                .collect::<Vec<_>>(),
        ),
    )
    .unwrap();
    let d = diff::diff(&opts(&a, &c)).unwrap();
    assert_eq!(d.records[0].metrics.max_abs, Some(0.5));
}

fn err(o: &Options) -> String {
    match diff::diff(o) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn unusable_input_is_an_error_naming_the_problem() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = || vec![t("aten::mul", 0, "forward", "output", &[1.0, 2.0])];
    let a = dump(&tmp.path().join("a"), "resnet50", 1, &rec());
    let other_model = dump(&tmp.path().join("m"), "gpt", 1, &rec());
    let other_step = dump(&tmp.path().join("s"), "resnet50", 2, &rec());

    let e = err(&opts(&a, &other_model));
    assert!(
        e.contains("model is `resnet50` in the baseline") && e.contains("`gpt` in the candidate"),
        "{e}"
    );
    let e = err(&opts(&a, &other_step));
    assert!(e.contains("step is `1`") && e.contains("`2`"), "{e}");
    let mut o = opts(&a, &a);
    o.reference = Some(other_model.clone());
    let e = err(&o);
    assert!(
        e.contains("the reference is not a dump of the same run") && e.contains("gpt"),
        "{e}"
    );

    // Not a dump.
    let empty = tmp.path().join("empty");
    fs::create_dir_all(empty.join("x")).unwrap();
    let e = err(&opts(&a, &empty));
    assert!(
        e.contains("not a dump") && e.contains("no meta.json"),
        "{e}"
    );
    let e = err(&opts(&a, &tmp.path().join("missing")));
    assert!(e.contains("no such file or directory"), "{e}");

    // A truncated tensor file.
    let trunc = dump(&tmp.path().join("t"), "resnet50", 1, &rec());
    let f = trunc.join("rank0/step1/tensors/000000.npy");
    let bytes = fs::read(&f).unwrap();
    fs::write(&f, &bytes[..bytes.len() - 3]).unwrap();
    let e = err(&opts(&a, &trunc));
    assert!(e.contains("000000.npy") && e.contains("truncated"), "{e}");
    fs::write(&f, &bytes[..5]).unwrap();
    assert!(err(&opts(&a, &trunc)).contains("truncated"));

    // A dump that did not finish (no meta.json), and a corrupt records line.
    let unfinished = dump(&tmp.path().join("u"), "resnet50", 1, &rec());
    fs::remove_file(unfinished.join("rank0/step1/meta.json")).unwrap();
    let e = err(&opts(&a, &unfinished));
    assert!(e.contains("did not finish"), "{e}");
    let corrupt = dump(&tmp.path().join("c"), "resnet50", 1, &rec());
    fs::write(
        corrupt.join("rank0/step1/records.jsonl"),
        "{\"key\": \"aten::mu",
    )
    .unwrap();
    let e = err(&opts(&a, &corrupt));
    assert!(e.contains("records.jsonl") && e.contains("line 1"), "{e}");

    // A root with two steps needs --step.
    let two = dump(&tmp.path().join("two"), "resnet50", 1, &rec());
    dump(&two, "resnet50", 2, &rec());
    let e = err(&opts(&a, &two));
    assert!(e.contains("holds 2 dumps") && e.contains("--step"), "{e}");
    let mut o = opts(&a, &two);
    o.step = Some(1);
    assert!(diff::diff(&o).unwrap().pass);

    // Nothing in common.
    let disjoint = dump(
        &tmp.path().join("d"),
        "resnet50",
        1,
        &[t("aten::exp", 0, "backward", "input", &[1.0])],
    );
    assert!(matches!(
        diff::diff(&opts(&a, &disjoint)),
        Err(DiffError::NothingPaired { .. })
    ));

    // A record pointing outside the dump.
    let escape = dump(&tmp.path().join("e"), "resnet50", 1, &rec());
    let p = escape.join("rank0/step1/records.jsonl");
    fs::write(
        &p,
        fs::read_to_string(&p).unwrap().replace(
            "tensors/000000.npy",
            "../../../a/rank0/step1/tensors/000000.npy",
        ),
    )
    .unwrap();
    assert!(err(&opts(&a, &escape)).contains("not a path inside the dump"));
}

/// Runs the diff on another thread and gives up after `secs`: a diff that blocks (on a FIFO)
/// fails the test instead of hanging it.
fn diff_within(o: &Options, secs: u64) -> Result<diff::Diff, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let o = o.clone();
    std::thread::spawn(move || {
        let _ = tx.send(diff::diff(&o).map_err(|e| e.to_string()));
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("modelzoo diff blocked for {secs} s"))
}

fn mkfifo(path: &std::path::Path) {
    let _ = fs::remove_file(path);
    let ok = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap()
        .success();
    assert!(ok, "mkfifo {}", path.display());
}

/// issue #28: `modelzoo diff` blocked forever on a FIFO among a dump's tensors. Every file it
/// opens is checked to be a regular file first; a FIFO is named in the error (exit 2), never
/// waited on — as a tensor, as records.jsonl or meta.json, as msprobe's dump.json, or as the
/// path given.
#[test]
fn a_fifo_in_a_dump_is_named_never_waited_on() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = || vec![t("aten::mul", 0, "forward", "output", &[1.0, 2.0])];
    let a = dump(&tmp.path().join("a"), "resnet50", 1, &rec());
    for (name, file) in [
        ("tensor", "tensors/000000.npy"),
        ("records", "records.jsonl"),
        ("meta", "meta.json"),
    ] {
        let c = dump(&tmp.path().join(name), "resnet50", 1, &rec());
        let fifo = c.join("rank0/step1").join(file);
        mkfifo(&fifo);
        let e = diff_within(&opts(&a, &c), 20)
            .err()
            .unwrap_or_else(|| panic!("{name}: no error"));
        assert!(
            e.contains(&fifo.display().to_string())
                && e.contains("not a regular file (a FIFO)")
                && e.contains("a dump holds regular files only"),
            "{name}: {e}"
        );
    }
    let ms = tmp.path().join("msprobe");
    fs::create_dir_all(&ms).unwrap();
    mkfifo(&ms.join("dump.json"));
    let e = diff_within(&opts(&a, &ms), 20).err().unwrap();
    assert!(e.contains("dump.json") && e.contains("a FIFO"), "{e}");
    let given = tmp.path().join("given.json");
    mkfifo(&given);
    let e = diff_within(&opts(&a, &given), 20).err().unwrap();
    assert!(
        e.contains("given.json: not a dump: a FIFO, not a dump directory"),
        "{e}"
    );
}

/// Issue #38 D12: `diff` on a 2 GB records.jsonl used 2.1 GB. A records.jsonl past its bound is
/// refused from its size, unread (sparse here: nothing real is written), and one line past the
/// line bound is refused holding only that bound.
#[test]
fn records_jsonl_is_read_within_its_bounds() {
    use validator::diff::dump::{MAX_RECORDS_BYTES, MAX_RECORD_LINE};
    let tmp = tempfile::tempdir().unwrap();
    let rec = || vec![t("aten::mul", 0, "forward", "output", &[1.0, 2.0])];
    let a = dump(&tmp.path().join("a"), "resnet50", 1, &rec());
    let big = dump(&tmp.path().join("big"), "resnet50", 1, &rec());
    let records = big.join("rank0/step1/records.jsonl");
    fs::OpenOptions::new()
        .write(true)
        .open(&records)
        .unwrap()
        .set_len(MAX_RECORDS_BYTES + 1)
        .unwrap();
    let started = std::time::Instant::now();
    let e = err(&opts(&a, &big));
    assert!(started.elapsed().as_secs() < 2, "it was read");
    assert!(
        e.contains("records.jsonl") && e.contains("more than the 536870912 bytes"),
        "{e}"
    );
    let long = dump(&tmp.path().join("long"), "resnet50", 1, &rec());
    let records = long.join("rank0/step1/records.jsonl");
    let first = fs::read_to_string(&records).unwrap();
    fs::write(
        &records,
        format!("{first}{}\n", " ".repeat(MAX_RECORD_LINE + 1)),
    )
    .unwrap();
    let e = err(&opts(&a, &long));
    assert!(
        e.contains("records.jsonl") && e.contains("line 2: longer than 1048576 bytes"),
        "{e}"
    );
}
