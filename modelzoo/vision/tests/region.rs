//! Issue #26: the training and validation transforms decode only the region of a JPEG they
//! read (`transforms::decode_region`), and that changes no pixel: the region's pixels are the
//! whole decode's bit for bit, and the transforms' outputs from a region equal theirs from the
//! whole image — for 4:2:0, 4:2:2, 4:4:4, progressive and greyscale files, odd sizes, and the
//! DCT reductions. Both sides are libjpeg-turbo's integer IDCT on this machine, so bit-exact
//! comparison is sound here (no floating-point reduction order is involved).

use std::path::{Path, PathBuf};
use std::process::Command;

use modelzoo_engine::rng::SplitMix64;
use modelzoo_testkit::{output_text, venv_python};
use modelzoo_vision::transforms::{
    center_crop_region, crop_pad, dct_reduction, decode, decode_region, resize_center_crop,
    resized_crop, train_draws, CropBox, RgbPixels,
};

const SIZE: u32 = 224;

/// JPEG files of every chroma layout PIL writes, made by the venv's PIL: (path, what).
fn jpegs(dir: &Path) -> Vec<(PathBuf, String)> {
    let script = r#"
import sys
import numpy as np
from PIL import Image, ImageFilter
rng = np.random.default_rng(7)
out = sys.argv[1]
def picture(w, h):
    # Smooth colour fields with sharp-edged blocks: real chroma detail at every scale.
    base = rng.integers(0, 256, (h // 16 + 1, w // 16 + 1, 3), dtype=np.uint8)
    img = Image.fromarray(base).resize((w, h), Image.BICUBIC).filter(ImageFilter.GaussianBlur(2))
    a = np.asarray(img).copy()
    for _ in range(12):
        x, y = rng.integers(0, w), rng.integers(0, h)
        a[y:y + rng.integers(5, 80), x:x + rng.integers(5, 80)] = rng.integers(0, 256, 3)
    return Image.fromarray(a)
cases = [
    ("420.jpg", 500, 375, dict(quality=90, subsampling=2)),
    ("422.jpg", 375, 500, dict(quality=88, subsampling=1)),
    ("444.jpg", 512, 341, dict(quality=95, subsampling=0)),
    ("progressive.jpg", 487, 365, dict(quality=85, progressive=True)),
    ("odd.jpg", 333, 251, dict(quality=92)),
    ("large.jpg", 1203, 997, dict(quality=90)),
]
for name, w, h, kw in cases:
    picture(w, h).save(f"{out}/{name}", "JPEG", **kw)
picture(401, 299).convert("L").save(f"{out}/grey.jpg", "JPEG", quality=90)
"#;
    let o = Command::new(venv_python())
        .args(["-c", script])
        .arg(dir)
        .output()
        .expect("run the venv's python");
    assert!(o.status.success(), "{}", output_text(&o));
    ["420", "422", "444", "progressive", "odd", "large", "grey"]
        .iter()
        .map(|n| (dir.join(format!("{n}.jpg")), n.to_string()))
        .collect()
}

fn whole(bytes: &[u8], reduce: u32) -> RgbPixels {
    let mut px = RgbPixels::default();
    decode(bytes, reduce, &mut px).unwrap();
    px
}

/// Every pixel of `want` (a rectangle of the reduced image) in `region` equals the whole
/// decode's at the same place.
fn assert_region_is_whole_decode(region: &RgbPixels, full: &RgbPixels, want: CropBox, what: &str) {
    let p = region.placement;
    assert_eq!(
        (p.image_width, p.image_height),
        (full.width, full.height),
        "{what}"
    );
    assert!(
        p.left <= want.left
            && p.top <= want.top
            && want.left + want.width <= p.left + region.width
            && want.top + want.height <= p.top + region.height,
        "{what}: the region {}x{} at ({}, {}) does not hold {want:?}",
        region.width,
        region.height,
        p.left,
        p.top
    );
    let len = want.width as usize * 3;
    for y in want.top..want.top + want.height {
        let at = |px: &RgbPixels, x: u32, y: u32| (y as usize * px.width as usize + x as usize) * 3;
        let got = &region.data[at(region, want.left - p.left, y - p.top)..][..len];
        let whole = &full.data[at(full, want.left, y)..][..len];
        assert!(
            got == whole,
            "{what}: row {y} differs from the whole decode"
        );
    }
}

#[test]
fn region_decodes_are_the_whole_decode_and_transforms_see_no_difference() {
    let dir = tempfile::tempdir().unwrap();
    let slot = (SIZE * SIZE * 3) as usize;
    let (mut a, mut b) = (vec![0u8; slot], vec![0u8; slot]);
    let mut region = RgbPixels::default();
    let mut smaller = 0usize;
    let mut rng = SplitMix64::new(11);
    for (path, what) in jpegs(dir.path()) {
        let bytes = std::fs::read(&path).unwrap();
        let full = whole(&bytes, 1);
        // Arbitrary regions at every reduction, corners and edges included.
        for reduce in [1u32, 2, 4, 8] {
            let scaled = whole(&bytes, reduce);
            for k in 0..25 {
                let w = 1 + rng.below(full.width as u64) as u32;
                let h = 1 + rng.below(full.height as u64) as u32;
                let need = CropBox {
                    left: rng.below((full.width - w) as u64 + 1) as u32,
                    top: rng.below((full.height - h) as u64 + 1) as u32,
                    width: w,
                    height: h,
                };
                let pad = rng.below(4) as u32;
                decode_region(&bytes, reduce, need, pad, &mut region).unwrap();
                let what = format!("{what} 1/{reduce} region {k} {need:?} pad {pad}");
                // What was asked for, in the reduced image's pixels, with its padding.
                let (x0, y0) = (
                    (need.left / reduce).saturating_sub(pad),
                    (need.top / reduce).saturating_sub(pad),
                );
                let x1 = ((need.left + need.width).div_ceil(reduce) + pad).min(scaled.width);
                let y1 = ((need.top + need.height).div_ceil(reduce) + pad).min(scaled.height);
                let want = CropBox {
                    left: x0,
                    top: y0,
                    width: x1 - x0,
                    height: y1 - y0,
                };
                assert_region_is_whole_decode(&region, &scaled, want, &what);
                smaller += (region.data.len() < scaled.data.len()) as usize;
            }
        }
        // The training transform: the same output from the crop's region as from the image.
        for k in 0..40u64 {
            let mut draw = SplitMix64::new(k);
            let (crop, _) = train_draws(full.width, full.height, &mut draw);
            let reduce = dct_reduction(crop, SIZE);
            let source = if reduce == 1 {
                &full
            } else {
                &whole(&bytes, reduce)
            };
            resized_crop(source, crop, reduce, SIZE, &mut a).unwrap();
            decode_region(
                &bytes,
                reduce,
                crop,
                crop_pad(crop, reduce, SIZE),
                &mut region,
            )
            .unwrap();
            resized_crop(&region, crop, reduce, SIZE, &mut b).unwrap();
            assert!(
                a == b,
                "{what}: train crop {crop:?} at 1/{reduce} from its region differs"
            );
        }
        // The validation transform.
        resize_center_crop(&full, SIZE, &mut a).unwrap();
        let (need, pad) = center_crop_region(full.width, full.height, SIZE);
        decode_region(&bytes, 1, need, pad, &mut region).unwrap();
        resize_center_crop(&region, SIZE, &mut b).unwrap();
        assert!(a == b, "{what}: val from its region {need:?} differs");
    }
    assert!(
        smaller > 100,
        "most regions decode less than the image ({smaller})"
    );
}

#[test]
fn the_large_image_s_training_crops_use_the_dct_reductions() {
    // The regions above include reductions 2-8 only where a crop is large enough; this image
    // makes sure the training path's reduced decodes were exercised.
    let dir = tempfile::tempdir().unwrap();
    let files = jpegs(dir.path());
    let (large, _) = files.iter().find(|(_, w)| w == "large").unwrap();
    let full = whole(&std::fs::read(large).unwrap(), 1);
    let reduced = (0..40u64)
        .filter(|&k| {
            let (crop, _) = train_draws(full.width, full.height, &mut SplitMix64::new(k));
            dct_reduction(crop, SIZE) > 1
        })
        .count();
    assert!(reduced > 0, "no draw of the 1203x997 image decodes reduced");
}

#[test]
fn truncated_and_corrupt_files_fail_whatever_the_region() {
    let dir = tempfile::tempdir().unwrap();
    let files = jpegs(dir.path());
    let bytes = std::fs::read(&files[0].0).unwrap();
    let top_left = CropBox {
        left: 0,
        top: 0,
        width: 32,
        height: 32,
    };
    let mut px = RgbPixels::default();
    // Cut after two thirds: the region above the cut would decode, but the file is refused as
    // a whole decode refuses it.
    let cut = &bytes[..bytes.len() * 2 / 3];
    let e = decode_region(cut, 1, top_left, 0, &mut px).unwrap_err();
    assert!(e.contains("Premature end of JPEG file"), "{e}");
    // Not a JPEG at all.
    let e = decode_region(b"not a jpeg", 1, top_left, 0, &mut px).unwrap_err();
    assert!(e.contains("cannot decode"), "{e}");
    // A region outside the image.
    let outside = CropBox {
        left: 10_000,
        ..top_left
    };
    let e = decode_region(&bytes, 1, outside, 0, &mut px).unwrap_err();
    assert!(e.contains("not inside"), "{e}");
    // An end-of-image marker early in the entropy-coded data, inside the region: the whole
    // decode refuses it, and so does the region's.
    let mut bad = bytes.clone();
    let sos = bad.windows(2).position(|w| w == [0xFF, 0xDA]).unwrap();
    bad[sos + 100..sos + 102].copy_from_slice(&[0xFF, 0xD9]);
    assert!(decode(&bad, 1, &mut px).is_err());
    let e = decode_region(&bad, 1, top_left, 0, &mut px).unwrap_err();
    assert!(e.contains("cannot decode"), "{e}");
}
