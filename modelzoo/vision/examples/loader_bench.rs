//! Benchmark helper (not a test) for `scripts/bench/loader_bench.sh`, issue #26: run_resnet's
//! image loader on a folder of real JPEG files, a decode-only pass over the same files, and a
//! per-stage profile of one sample's time, before (the `image` crate's decoder, scalar
//! Triangle resizing, fp32 CHW on the host) and after (libjpeg-turbo, SIMD resizing fused with
//! the crop, uint8 batches normalised by the consumer).
//!
//! ```text
//! loader_bench loader  --data DIR --split train|val --workers K [--batches N] [--batch B]
//!                      [--size S] [--pixels fp32-nhwc|fp32|uint8] [--no-dct]
//! loader_bench decode  --data DIR --split train|val --workers K [--images N]
//! loader_bench profile --data DIR --split train|val [--images N] [--batch B] [--size S]
//! ```
//!
//! `loader` and `decode` print one JSON line (`{"ips": images/s, ...}`); `profile` prints a
//! markdown table and a JSON line. `loader` times N batches after a first (thread start-up)
//! one. `--pixels`: what the batches hold — fp32-nhwc (the default: run_resnet's on the CPU,
//! normalised float in channels-last memory), fp32 (contiguous NCHW, as torchvision's
//! DataLoader yields) or uint8 (run_resnet's on cuda/sdaa; the consumer then normalises each
//! batch with `DeviceNormalizer`, here on the CPU), so every side ends with a normalised float
//! batch.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use modelzoo_engine::rng::SplitMix64;
use modelzoo_vision::loader::{filled_batch, zeroed};
use modelzoo_vision::transforms::{
    center_crop_region, crop_pad, dct_reduction, decode, decode_region, flip_horizontal, jpeg_size,
    resize_center_crop, resized_crop, train_draws, DeviceNormalizer, Normalize, RgbPixels,
};
use modelzoo_vision::{BatchPixels, Dataset, ImageFolder, Loader, LoaderOptions, Split};
use tch::{Kind, Tensor};

struct Args {
    mode: String,
    data: PathBuf,
    split: Split,
    workers: usize,
    batches: usize,
    batch: usize,
    images: usize,
    size: usize,
    pixels: BatchPixels,
    dct: bool,
}

fn parse() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mode = it
        .next()
        .ok_or("usage: loader_bench loader|decode|profile --data DIR ...")?;
    let mut a = Args {
        mode,
        data: PathBuf::new(),
        split: Split::Train,
        workers: 1,
        batches: 10,
        batch: 64,
        images: 640,
        size: 224,
        pixels: BatchPixels::FloatChannelsLast,
        dct: true,
    };
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let num = |v: String| v.parse::<usize>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--data" => a.data = PathBuf::from(value()?),
            "--split" => {
                a.split = match value()?.as_str() {
                    "train" => Split::Train,
                    "val" => Split::Val,
                    v => return Err(format!("--split {v}: use train or val")),
                }
            }
            "--workers" => a.workers = num(value()?)?,
            "--batches" => a.batches = num(value()?)?.max(1),
            "--batch" => a.batch = num(value()?)?.max(1),
            "--images" => a.images = num(value()?)?.max(1),
            "--size" => a.size = num(value()?)?.max(1),
            "--pixels" => {
                a.pixels = match value()?.as_str() {
                    "fp32-nhwc" => BatchPixels::FloatChannelsLast,
                    "fp32" => BatchPixels::Float,
                    "uint8" => BatchPixels::Uint8,
                    v => return Err(format!("--pixels {v}: use fp32-nhwc, fp32 or uint8")),
                }
            }
            "--no-dct" => a.dct = false,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if a.data.as_os_str().is_empty() {
        return Err(
            "--data DIR is required (a folder made by scripts/bench/loader_images.py)".into(),
        );
    }
    Ok(a)
}

fn split_dir(a: &Args) -> PathBuf {
    a.data.join(match a.split {
        Split::Train => "train",
        Split::Val => "val",
    })
}

/// Every image file of a split, in ImageFolder's order.
fn files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut out = Vec::new();
    let mut classes: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    classes.sort();
    for c in classes {
        let mut f: Vec<PathBuf> = std::fs::read_dir(&c)
            .map_err(|e| format!("{}: {e}", c.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file())
            .collect();
        f.sort();
        out.extend(f);
    }
    if out.is_empty() {
        return Err(format!("{} holds no images", dir.display()));
    }
    Ok(out)
}

fn loader(a: &Args) -> Result<(), String> {
    let set = ImageFolder::scan(&split_dir(a), a.split, a.size)
        .map_err(|e| e.to_string())?
        .with_dct_scaling(a.dct);
    let n_files = set.len();
    let opts = LoaderOptions {
        batch_size: a.batch,
        shuffle: a.split == Split::Train,
        drop_last: true,
        num_workers: a.workers,
        prefetch: modelzoo_vision::PREFETCH,
        seed: 42,
    };
    let loader = Loader::new(Arc::new(set), opts).pixels(a.pixels);
    let mut norm = loader.normalization().map(DeviceNormalizer::new);
    let per_epoch = loader.batches_per_epoch();
    if per_epoch == 0 {
        return Err(format!("{n_files} images make no batch of {}", a.batch));
    }
    let (mut images, mut seen, mut epoch) = (0usize, 0usize, 0u64);
    let mut start = Instant::now();
    'outer: loop {
        for batch in loader.epoch(epoch, 0) {
            let x = match norm.as_mut() {
                Some(n) => n.apply(&batch.images, false),
                None => batch.images,
            };
            debug_assert_eq!(x.kind(), Kind::Float);
            seen += 1;
            if seen == 1 {
                start = Instant::now(); // the first batch waits for the threads to start
                continue;
            }
            images += x.size()[0] as usize;
            if seen > a.batches {
                break 'outer;
            }
        }
        epoch += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{{\"impl\": \"run_resnet\", \"split\": \"{}\", \"workers\": {}, \"batch\": {}, \"images\": {images}, \"seconds\": {secs:.4}, \"ips\": {:.2}, \"pixels\": \"{:?}\", \"skipped\": {}}}",
        if a.split == Split::Train { "train" } else { "val" },
        a.workers,
        a.batch,
        images as f64 / secs,
        loader.batch_pixels(),
        loader.skipped()
    );
    Ok(())
}

/// Decode-only: read and decode (full size, RGB) `--images` files on `--workers` threads.
fn decode_only(a: &Args) -> Result<(), String> {
    let all = files(&split_dir(a))?;
    let list: Arc<Vec<PathBuf>> =
        Arc::new((0..a.images).map(|i| all[i % all.len()].clone()).collect());
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let threads: Vec<_> = (0..a.workers.max(1))
        .map(|_| {
            let (list, next) = (Arc::clone(&list), Arc::clone(&next));
            std::thread::spawn(move || -> Result<(), String> {
                let mut px = RgbPixels::default();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(p) = list.get(i) else { return Ok(()) };
                    let bytes = std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?;
                    decode(&bytes, 1, &mut px).map_err(|e| format!("{}: {e}", p.display()))?;
                }
            })
        })
        .collect();
    for t in threads {
        t.join()
            .map_err(|_| "a decode thread panicked".to_string())??;
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{{\"impl\": \"libjpeg-turbo decode-only\", \"workers\": {}, \"images\": {}, \"seconds\": {secs:.4}, \"ips\": {:.2}}}",
        a.workers,
        list.len(),
        list.len() as f64 / secs
    );
    Ok(())
}

/// The loader before issue #26, stage by stage (kept here only to profile against).
mod before {
    use image::imageops::FilterType;
    use image::RgbImage;
    use modelzoo_engine::rng::SplitMix64;

    pub fn random_resized_crop(img: &RgbImage, size: usize, rng: &mut SplitMix64) -> RgbImage {
        let (w, h) = (img.width() as f64, img.height() as f64);
        let area = w * h;
        let (lr0, lr1) = ((3.0f64 / 4.0).ln(), (4.0f64 / 3.0).ln());
        for _ in 0..10 {
            let target = area * rng.uniform(0.08, 1.0);
            let ratio = rng.uniform(lr0, lr1).exp();
            let cw = (target * ratio).sqrt().round();
            let ch = (target / ratio).sqrt().round();
            if cw > 0.0 && ch > 0.0 && cw <= w && ch <= h {
                let x = rng.below((w - cw) as u64 + 1) as u32;
                let y = rng.below((h - ch) as u64 + 1) as u32;
                let crop = image::imageops::crop_imm(img, x, y, cw as u32, ch as u32).to_image();
                return image::imageops::resize(
                    &crop,
                    size as u32,
                    size as u32,
                    FilterType::Triangle,
                );
            }
        }
        image::imageops::resize(img, size as u32, size as u32, FilterType::Triangle)
    }

    pub fn resize_center_crop(img: &RgbImage, size: usize) -> RgbImage {
        let short = ((size * 256) / 224).max(size) as f64;
        let (w, h) = (img.width() as f64, img.height() as f64);
        let scale = short / w.min(h);
        let (nw, nh) = (
            ((w * scale).round() as u32).max(size as u32),
            ((h * scale).round() as u32).max(size as u32),
        );
        let resized = image::imageops::resize(img, nw, nh, FilterType::Triangle);
        let x = (nw - size as u32) / 2;
        let y = (nh - size as u32) / 2;
        image::imageops::crop_imm(&resized, x, y, size as u32, size as u32).to_image()
    }

    pub fn normalize_chw(img: &RgbImage, mean: [f32; 3], std: [f32; 3]) -> Vec<f32> {
        let (w, h) = (img.width() as usize, img.height() as usize);
        let mut out = vec![0f32; 3 * w * h];
        for (i, px) in img.pixels().enumerate() {
            for c in 0..3 {
                out[c * w * h + i] = (px[c] as f32 / 255.0 - mean[c]) / std[c];
            }
        }
        out
    }
}

/// Accumulated seconds per stage, in the order first seen.
#[derive(Default)]
struct Stages(Vec<(&'static str, f64)>);

impl Stages {
    fn add(&mut self, name: &'static str, secs: f64) {
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some((_, s)) => *s += secs,
            None => self.0.push((name, secs)),
        }
    }
    fn time<T>(&mut self, name: &'static str, f: impl FnOnce() -> T) -> T {
        let t = Instant::now();
        let out = f();
        self.add(name, t.elapsed().as_secs_f64());
        out
    }
    fn total(&self) -> f64 {
        self.0.iter().map(|(_, s)| s).sum()
    }
}

const STAGES: [&str; 7] = [
    "read",
    "decode",
    "crop/resize",
    "flip",
    "normalize",
    "collate",
    "copy to device",
];

fn profile(a: &Args) -> Result<(), String> {
    let all = files(&split_dir(a))?;
    let list: Vec<&PathBuf> = (0..a.images).map(|i| &all[i % all.len()]).collect();
    let (size, train) = (a.size, a.split == Split::Train);
    let norm = Normalize::IMAGENET;

    // Before: image::open, Triangle resize on crops, fp32 CHW per sample, Vec + from_slice.
    let mut old = Stages::default();
    let mut batch_f32: Vec<f32> = Vec::new();
    let mut in_batch = 0;
    for (i, p) in list.iter().enumerate() {
        let mut rng = SplitMix64::new(i as u64);
        let bytes = old
            .time("read", || std::fs::read(p))
            .map_err(|e| e.to_string())?;
        let img = old
            .time("decode", || {
                image::load_from_memory(&bytes).map(|d| d.to_rgb8())
            })
            .map_err(|e| format!("{}: {e}", p.display()))?;
        let mut out = old.time("crop/resize", || {
            if train {
                before::random_resized_crop(&img, size, &mut rng)
            } else {
                before::resize_center_crop(&img, size)
            }
        });
        if train {
            old.time("flip", || {
                if rng.next_f64() < 0.5 {
                    image::imageops::flip_horizontal_in_place(&mut out)
                }
            });
        }
        let px = old.time("normalize", || {
            before::normalize_chw(&out, norm.mean, norm.std)
        });
        old.time("collate", || batch_f32.extend_from_slice(&px));
        in_batch += 1;
        if in_batch == a.batch || i + 1 == list.len() {
            let t = old.time("collate", || {
                Tensor::from_slice(&batch_f32).view([in_batch as i64, 3, size as i64, size as i64])
            });
            drop(t);
            batch_f32.clear();
            in_batch = 0;
        }
    }

    // After: the loader's own functions. Each sample's pixels go into a uint8 slot; then per
    // batch the two ways run_resnet hands a batch over: fp32 in NHWC memory normalised by the
    // loader thread (its CPU default: "normalize" is the lookup into the batch tensor,
    // "collate" the batch tensor around it), or uint8 (cuda/sdaa: "collate" is the batch
    // tensor, "normalize" the DeviceNormalizer's ops, here on the CPU).
    let mut new = Stages::default();
    let mut u8_path = Stages::default();
    let mut normalizer = DeviceNormalizer::new(norm);
    let lut = norm.lut();
    let slot = size * size * 3;
    let mut px = RgbPixels::default();
    let mut reduced = 0usize;
    let mut slots = vec![0u8; a.batch * slot];
    for (b, chunk) in list.chunks(a.batch).enumerate() {
        for (j, p) in chunk.iter().enumerate() {
            let mut rng = SplitMix64::new((b * a.batch + j) as u64);
            let out = &mut slots[j * slot..(j + 1) * slot];
            let bytes = new
                .time("read", || std::fs::read(p))
                .map_err(|e| e.to_string())?;
            let fail = |e: String| format!("{}: {e}", p.display());
            if train {
                let (w, h) = jpeg_size(&bytes).ok_or_else(|| fail("not a JPEG".into()))?;
                let (crop, flip) = train_draws(w, h, &mut rng);
                let r = if a.dct {
                    dct_reduction(crop, size as u32)
                } else {
                    1
                };
                reduced += (r > 1) as usize;
                let pad = crop_pad(crop, r, size as u32);
                new.time("decode", || decode_region(&bytes, r, crop, pad, &mut px))
                    .map_err(fail)?;
                new.time("crop/resize", || {
                    resized_crop(&px, crop, r, size as u32, out)
                })
                .map_err(fail)?;
                new.time("flip", || {
                    if flip {
                        flip_horizontal(out, size)
                    }
                });
            } else {
                let (w, h) = jpeg_size(&bytes).ok_or_else(|| fail("not a JPEG".into()))?;
                let (need, pad) = center_crop_region(w, h, size as u32);
                new.time("decode", || decode_region(&bytes, 1, need, pad, &mut px))
                    .map_err(fail)?;
                new.time("crop/resize", || resize_center_crop(&px, size as u32, out))
                    .map_err(fail)?;
            }
        }
        let n = chunk.len();
        let shape = [n as i64, size as i64, size as i64, 3];
        let t0 = Instant::now();
        let mut lookup = 0.0;
        let x = filled_batch::<f32>(shape, |values| {
            let t = Instant::now();
            for (p, o) in slots[..n * slot]
                .chunks_exact(3)
                .zip(values.chunks_exact_mut(3))
            {
                o[0].write(lut[0][p[0] as usize]);
                o[1].write(lut[1][p[1] as usize]);
                o[2].write(lut[2][p[2] as usize]);
            }
            lookup = t.elapsed().as_secs_f64();
            n
        })
        .permute([0, 3, 1, 2]);
        new.add("normalize", lookup);
        new.add("collate", t0.elapsed().as_secs_f64() - lookup);
        drop(x);
        // The uint8 way: the loader writes the slots in the tensor itself, so its collate is
        // the tensor alone (the zeroing and copy here are left out of the time).
        let t0 = Instant::now();
        let mut copy = 0.0;
        let t = filled_batch::<u8>(shape, |bytes| {
            let t = Instant::now();
            zeroed(bytes).copy_from_slice(&slots[..n * slot]);
            copy = t.elapsed().as_secs_f64();
            n
        });
        u8_path.add("collate", t0.elapsed().as_secs_f64() - copy);
        let x = u8_path.time("normalize", || normalizer.apply(&t, false));
        drop(x);
    }
    for st in ["read", "decode", "crop/resize", "flip"] {
        if let Some(&(_, v)) = new.0.iter().find(|(k, _)| *k == st) {
            u8_path.add(st, v);
        }
    }

    let n = list.len() as f64;
    let us = |s: &Stages, name: &str| {
        s.0.iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| format!("{:.0}", v / n * 1e6))
            .unwrap_or_else(|| "—".into())
    };
    let split = if train { "train" } else { "val" };
    println!(
        "| stage ({split}, µs per sample) | before | after, fp32 NHWC (CPU) | after, uint8 (cuda/sdaa; normalize timed on the CPU) |"
    );
    println!("|---|---|---|---|");
    for st in STAGES {
        let row = if st == "copy to device" {
            [
                format!("{} B fp32", 3 * size * size * 4),
                "— (on the CPU)".to_string(),
                format!("{} B uint8", 3 * size * size),
            ]
        } else {
            [us(&old, st), us(&new, st), us(&u8_path, st)]
        };
        println!("| {st} | {} | {} | {} |", row[0], row[1], row[2]);
    }
    let total = |s: &Stages| format!("{:.0}", s.total() / n * 1e6);
    println!(
        "| total | {} | {} | {} |",
        total(&old),
        total(&new),
        total(&u8_path)
    );
    let json = |s: &Stages| {
        s.0.iter()
            .map(|(k, v)| format!("\"{k}\": {:.1}", v / n * 1e6))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "{{\"split\": \"{split}\", \"images\": {}, \"dct_reduced\": {reduced}, \"before_us\": {{{}}}, \"after_fp32_nhwc_us\": {{{}}}, \"after_uint8_us\": {{{}}}}}",
        list.len(),
        json(&old),
        json(&new),
        json(&u8_path)
    );
    Ok(())
}

fn main() {
    // The allocator settings run_resnet runs its loader under.
    modelzoo_engine::app::keep_freed_memory();
    tch::set_num_threads(1);
    let result = parse().and_then(|a| match a.mode.as_str() {
        "loader" => loader(&a),
        "decode" => decode_only(&a),
        "profile" => profile(&a),
        m => Err(format!("unknown mode {m}: use loader, decode or profile")),
    });
    if let Err(e) = result {
        eprintln!("loader_bench: {e}");
        std::process::exit(2);
    }
}
