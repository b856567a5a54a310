//! torchvision's image transforms and normalisation statistics: what the datasets here apply,
//! and what another image model's own data can reuse.

use image::imageops::FilterType;
use image::RgbImage;
use modelzoo_engine::rng::SplitMix64;

/// ImageNet normalisation (torchvision).
pub const IMAGENET_MEAN: [f32; 3] = [0.485, 0.456, 0.406];
pub const IMAGENET_STD: [f32; 3] = [0.229, 0.224, 0.225];
/// CIFAR-10 normalisation (commonly used values).
pub const CIFAR_MEAN: [f32; 3] = [0.4914, 0.4822, 0.4465];
pub const CIFAR_STD: [f32; 3] = [0.2470, 0.2435, 0.2616];

/// torchvision `RandomResizedCrop(size, scale=(0.08, 1), ratio=(3/4, 4/3))`.
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
            return image::imageops::resize(&crop, size as u32, size as u32, FilterType::Triangle);
        }
    }
    // Fallback: central crop within the ratio bounds.
    let in_ratio = w / h;
    let (cw, ch) = if in_ratio < 3.0 / 4.0 {
        (w, (w / (3.0 / 4.0)).round())
    } else if in_ratio > 4.0 / 3.0 {
        ((h * 4.0 / 3.0).round(), h)
    } else {
        (w, h)
    };
    let x = ((w - cw) / 2.0) as u32;
    let y = ((h - ch) / 2.0) as u32;
    let crop = image::imageops::crop_imm(img, x, y, cw as u32, ch as u32).to_image();
    image::imageops::resize(&crop, size as u32, size as u32, FilterType::Triangle)
}

/// torchvision `Resize(size * 256 / 224)` (shorter side) then `CenterCrop(size)`.
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

/// HWC u8 → CHW f32, `(x/255 - mean) / std`.
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
