//! torchvision's image transforms on 8-bit RGB pixels — `RandomResizedCrop` + flip for
//! training, `Resize` + `CenterCrop` for validation — and the normalisation that turns the
//! pixels into a model's float input, on the host ([`Normalize::hwc_to_chw`]) or on the
//! device ([`DeviceNormalizer`]).
//!
//! Decoding is libjpeg-turbo (TurboJPEG; the decoder PIL and torchvision use, so the pixels are
//! the same bit for bit) for JPEG files and the `image` crate for PNG and the JPEG colour
//! spaces TurboJPEG does not convert (CMYK). Resizing is `fast_image_resize`'s SIMD
//! convolution with the bilinear filter scaled to the reduction (antialiased), Pillow's own
//! algorithm: outputs are within two levels of 255 of torchvision's on PIL images, four in five
//! values equal and nearly all the rest off by one (the fixed-point coefficients are rounded to
//! 15 bits instead of Pillow's 22; tests/torchvision.rs).

use std::cell::RefCell;

use fast_image_resize as fr;
use modelzoo_engine::rng::SplitMix64;
use tch::{Device, Kind, Tensor};

/// ImageNet normalisation (torchvision).
pub const IMAGENET_MEAN: [f32; 3] = [0.485, 0.456, 0.406];
pub const IMAGENET_STD: [f32; 3] = [0.229, 0.224, 0.225];
/// CIFAR-10 normalisation (commonly used values).
pub const CIFAR_MEAN: [f32; 3] = [0.4914, 0.4822, 0.4465];
pub const CIFAR_STD: [f32; 3] = [0.2470, 0.2435, 0.2616];

/// Decoded images larger than this many pixels are refused (a 100-megapixel RGB image is
/// 300 MB) rather than exhausting a loader thread's memory.
pub const MAX_PIXELS: u64 = 100_000_000;

/// Decoded 8-bit RGB pixels: `height` rows of `width * 3` bytes, the part of the image that
/// `placement` says. The buffer is reused from one image to the next.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RgbPixels {
    pub width: u32,
    pub height: u32,
    pub data: Vec<u8>,
    pub placement: Placement,
}

/// Where decoded pixels sit in their image, in the image's pixels at the decode's reduction:
/// all of it after [`decode`], a rectangle of it after [`decode_region`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    pub left: u32,
    pub top: u32,
    pub image_width: u32,
    pub image_height: u32,
}

impl RgbPixels {
    /// Sizes the buffer for a whole `width`×`height` image.
    fn set_size(&mut self, width: u32, height: u32) -> Result<(), String> {
        self.set_region(width, height, Placement::whole(width, height))
    }

    fn set_region(&mut self, width: u32, height: u32, placement: Placement) -> Result<(), String> {
        let px = width as u64 * height as u64;
        if px == 0 {
            return Err("empty image".into());
        }
        if px > MAX_PIXELS {
            return Err(format!(
                "{width}x{height} is over the {} megapixel limit of a decoded image",
                MAX_PIXELS / 1_000_000
            ));
        }
        self.width = width;
        self.height = height;
        self.placement = placement;
        self.data.resize(px as usize * 3, 0);
        Ok(())
    }

    fn view(&self) -> Result<fr::images::ImageRef<'_>, String> {
        fr::images::ImageRef::new(self.width, self.height, &self.data, fr::PixelType::U8x3)
            .map_err(|e| format!("decoded image {}x{}: {e}", self.width, self.height))
    }
}

impl Placement {
    fn whole(width: u32, height: u32) -> Placement {
        Placement {
            left: 0,
            top: 0,
            image_width: width,
            image_height: height,
        }
    }
}

thread_local! {
    static JPEG: RefCell<Option<turbojpeg::Decompressor>> = const { RefCell::new(None) };
    static RESIZER: RefCell<Option<fr::Resizer>> = const { RefCell::new(None) };
}

/// Whether `bytes` start like a JPEG file (SOI marker).
fn is_jpeg(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0xFF, 0xD8, 0xFF])
}

/// The width and height of an encoded image, read from its header without decoding it;
/// `None` when only a full decode can tell (a format or colour space [`decode`] hands to the
/// `image` crate).
pub fn jpeg_size(bytes: &[u8]) -> Option<(u32, u32)> {
    jpeg_header(bytes).map(|h| (h.width as u32, h.height as u32))
}

/// The header of a JPEG that TurboJPEG decodes to RGB; `None` for anything else (not a JPEG,
/// an unreadable header, CMYK / YCCK), which [`decode`] hands to the `image` crate.
fn jpeg_header(bytes: &[u8]) -> Option<turbojpeg::DecompressHeader> {
    if !is_jpeg(bytes) {
        return None;
    }
    let h = with_jpeg(|d| d.read_header(bytes).map_err(|e| e.to_string())).ok()?;
    let converts = !matches!(
        h.colorspace,
        turbojpeg::Colorspace::CMYK | turbojpeg::Colorspace::YCCK
    );
    converts.then_some(h)
}

fn with_jpeg<T>(
    f: impl FnOnce(&mut turbojpeg::Decompressor) -> Result<T, String>,
) -> Result<T, String> {
    JPEG.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(
                turbojpeg::Decompressor::new()
                    .map_err(|e| format!("cannot start the JPEG decoder (libturbojpeg): {e}"))?,
            );
        }
        match slot.as_mut() {
            Some(d) => f(d),
            None => Err("no JPEG decoder".into()),
        }
    })
}

/// Decode `bytes` (JPEG or PNG) into `out` as 8-bit RGB, reducing a JPEG by the DCT scaling
/// factor `1 / reduce` (1, 2, 4 or 8: libjpeg-turbo's SIMD-accelerated ones; dimensions round
/// up) while decoding. A corrupt or truncated file is an error (libjpeg-turbo's "Premature
/// end of JPEG file" included, which PIL refuses too).
pub fn decode(bytes: &[u8], reduce: u32, out: &mut RgbPixels) -> Result<(), String> {
    if let Some(h) = jpeg_header(bytes) {
        return with_jpeg(|d| {
            let r = match reduce {
                1 | 2 | 4 | 8 => reduce as usize,
                _ => 1,
            };
            let (w, hh) = (h.width.div_ceil(r), h.height.div_ceil(r));
            out.set_size(w as u32, hh as u32)?;
            let image = turbojpeg::Image {
                pixels: &mut out.data[..],
                width: w,
                pitch: w * 3,
                height: hh,
                format: turbojpeg::PixelFormat::RGB,
            };
            d.decompress(bytes, image)
                .map_err(|e| format!("cannot decode: {e}"))
        });
    }
    let img = image::load_from_memory(bytes)
        .map_err(|e| format!("cannot decode: {e}"))?
        .to_rgb8();
    out.set_size(img.width(), img.height())?;
    out.data.copy_from_slice(img.as_raw());
    Ok(())
}

/// Pixels decoded around a region's edges on top of what it needs: libjpeg's fancy upsampling
/// treats a partial row's ends as the image's edges (libjpeg.txt, "Decompressing partial
/// scanlines"), which changes the outermost pixel; one iMCU (16 pixels at most) keeps that
/// change outside what the transforms read.
const REGION_EDGE: u32 = 16;

extern "C" {
    // csrc/jpeg_region.c
    fn mz_jpeg_decode_region(
        data: *const u8,
        len: std::ffi::c_ulong,
        reduce: u32,
        left: u32,
        top: u32,
        width: u32,
        height: u32,
        out: *mut u8,
        out_len: usize,
        out_left: *mut u32,
        out_width: *mut u32,
        scaled_width: *mut u32,
        scaled_height: *mut u32,
        message: *mut std::ffi::c_char,
        message_len: usize,
    ) -> i32;
}

/// Decode only the part of `bytes` that `need` (a rectangle in full-size pixels) covers, plus
/// `pad` pixels of the reduced image around it (what a resampling filter reads past its box),
/// reduced by `1 / reduce` as [`decode`] does: the rows above are skipped without being
/// transformed, the columns beside it are never transformed, and decoding stops after its last
/// row — what DALI's and TensorFlow's decode-and-crop do. Over `need` and its padding the
/// pixels are the whole decode's bit for bit (the region's outermost columns may differ, so a
/// margin beyond them is decoded too); [`RgbPixels::placement`] says where the region sits.
/// Anything that is not a JPEG TurboJPEG can convert, and a JPEG that does not end with its
/// end-of-image marker (truncated, or with data appended), is decoded whole: a truncated file
/// fails as it always has, whichever region is asked for. Corrupt data below the region goes
/// unread.
pub fn decode_region(
    bytes: &[u8],
    reduce: u32,
    need: CropBox,
    pad: u32,
    out: &mut RgbPixels,
) -> Result<(), String> {
    let Some((width, height)) = region_decodable(bytes) else {
        return decode(bytes, reduce, out);
    };
    let r = match reduce {
        1 | 2 | 4 | 8 => reduce,
        _ => 1,
    };
    if need.width == 0
        || need.height == 0
        || need.left.saturating_add(need.width) > width
        || need.top.saturating_add(need.height) > height
    {
        return Err(format!(
            "region {need:?} is not inside the {width}x{height} image"
        ));
    }
    let (iw, ih) = (width.div_ceil(r), height.div_ceil(r));
    let margin = pad.saturating_add(REGION_EDGE);
    let span = |start: u32, len: u32, limit: u32| {
        let lo = (start / r).saturating_sub(margin);
        let hi = ((start + len).div_ceil(r) + margin).min(limit);
        (lo, hi)
    };
    let (x0, x1) = span(need.left, need.width, iw);
    let (y0, y1) = span(need.top, need.height, ih);
    // The row may widen to the iMCU boundary left of x0 (by under 32 pixels at full size).
    let cap_width = (x1 - x0 + 32).min(iw);
    out.set_region(cap_width, y1 - y0, Placement::whole(iw, ih))?;
    let (mut left, mut row_width, mut sw, mut sh) = (0u32, 0u32, 0u32, 0u32);
    let mut message = [0 as std::ffi::c_char; 200];
    // SAFETY: `bytes` and `out.data` are live for the call, with their true lengths; the C side
    // writes at most `out.data.len()` bytes there and a NUL-terminated message of at most
    // `message.len()` bytes, and catches every libjpeg error itself (no unwinding across).
    let rc = unsafe {
        mz_jpeg_decode_region(
            bytes.as_ptr(),
            bytes.len() as std::ffi::c_ulong,
            r,
            x0,
            y0,
            x1 - x0,
            y1 - y0,
            out.data.as_mut_ptr(),
            out.data.len(),
            &mut left,
            &mut row_width,
            &mut sw,
            &mut sh,
            message.as_mut_ptr(),
            message.len(),
        )
    };
    if rc != 0 || (sw, sh) != (iw, ih) {
        // Whatever libjpeg refused, the whole decode has the last word: the same error for a
        // corrupt file (libjpeg-turbo underneath both), the image itself for anything else.
        // SAFETY: the C side NUL-terminates `message` (it was zeroed, and snprintf terminates).
        let why = unsafe { std::ffi::CStr::from_ptr(message.as_ptr()) };
        tracing::debug!(
            "region decode refused ({}; scaled {sw}x{sh}, expected {iw}x{ih}): decoding whole",
            why.to_string_lossy()
        );
        return decode(bytes, reduce, out);
    }
    out.width = row_width;
    out.data
        .truncate(row_width as usize * (y1 - y0) as usize * 3);
    out.placement.left = left;
    out.placement.top = y0;
    Ok(())
}

/// The size of a JPEG [`decode_region`] decodes in part: one that TurboJPEG converts, ends with
/// its end-of-image marker, and has a chroma layout tests/region.rs checks (4:4:4, 4:2:2,
/// 4:2:0, greyscale; libjpeg-turbo's partial decoding had bugs with others in earlier
/// releases). `None` means: decode it whole.
fn region_decodable(bytes: &[u8]) -> Option<(u32, u32)> {
    use turbojpeg::Subsamp;
    if !bytes.ends_with(&[0xFF, 0xD9]) {
        return None;
    }
    let h = jpeg_header(bytes)?;
    let tested = matches!(
        h.subsamp,
        Subsamp::None | Subsamp::Sub2x1 | Subsamp::Sub2x2 | Subsamp::Gray
    );
    tested.then_some((h.width as u32, h.height as u32))
}

/// A crop in pixels of the source image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CropBox {
    pub left: u32,
    pub top: u32,
    pub width: u32,
    pub height: u32,
}

/// The crop torchvision's `RandomResizedCrop(scale=(0.08, 1), ratio=(3/4, 4/3)).get_params`
/// draws for a `width`×`height` image: up to 10 tries of a uniform area fraction and a
/// log-uniform aspect ratio, rounded half to even as Python's `round`, placed uniformly; else
/// the central crop within the ratio bounds.
pub fn random_resized_crop_box(width: u32, height: u32, rng: &mut SplitMix64) -> CropBox {
    let (w, h) = (width as f64, height as f64);
    let area = w * h;
    let (lr0, lr1) = ((3.0f64 / 4.0).ln(), (4.0f64 / 3.0).ln());
    for _ in 0..10 {
        let target = area * rng.uniform(0.08, 1.0);
        let ratio = rng.uniform(lr0, lr1).exp();
        let cw = (target * ratio).sqrt().round_ties_even();
        let ch = (target / ratio).sqrt().round_ties_even();
        if cw > 0.0 && ch > 0.0 && cw <= w && ch <= h {
            let top = rng.below((h - ch) as u64 + 1) as u32;
            let left = rng.below((w - cw) as u64 + 1) as u32;
            return CropBox {
                left,
                top,
                width: cw as u32,
                height: ch as u32,
            };
        }
    }
    let in_ratio = w / h;
    let (cw, ch) = if in_ratio < 3.0 / 4.0 {
        (
            width,
            ((w / (3.0 / 4.0)).round_ties_even() as u32).min(height),
        )
    } else if in_ratio > 4.0 / 3.0 {
        (
            ((h * 4.0 / 3.0).round_ties_even() as u32).min(width),
            height,
        )
    } else {
        (width, height)
    };
    CropBox {
        left: (width - cw) / 2,
        top: (height - ch) / 2,
        width: cw,
        height: ch,
    }
}

/// What one training sample draws, in order: the crop, then the horizontal flip
/// (`RandomHorizontalFlip(0.5)`).
pub fn train_draws(width: u32, height: u32, rng: &mut SplitMix64) -> (CropBox, bool) {
    let crop = random_resized_crop_box(width, height, rng);
    (crop, rng.next_f64() < 0.5)
}

/// The DCT reduction (1, 2, 4 or 8) to decode a JPEG with for a crop of `crop` resized to
/// `size`: the largest that leaves the reduced crop's shorter side at least twice `size`, so
/// the antialiased resize after it still halves the image or more and smooths the DCT
/// scaling's own blockier low-pass away; 1 when the crop's shorter side is under four times
/// the output (every ImageNet-sized image at 224). The pixels then differ from a full-size
/// decode's by more than [`resized_crop`] otherwise keeps to (a mean of about one level;
/// tests/torchvision.rs).
pub fn dct_reduction(crop: CropBox, size: u32) -> u32 {
    let short = crop.width.min(crop.height) as u64;
    let mut r = 1u64;
    while r < 8 && short / (r * 2) >= 2 * size as u64 {
        r *= 2;
    }
    r as u32
}

fn resize(
    src: &fr::images::ImageRef<'_>,
    crop: Option<fr::images::CroppedImage<'_, fr::images::ImageRef<'_>>>,
    box_f: Option<(f64, f64, f64, f64)>,
    size: u32,
    out: &mut [u8],
) -> Result<(), String> {
    let mut dst = fr::images::Image::from_slice_u8(size, size, out, fr::PixelType::U8x3)
        .map_err(|e| format!("output buffer for {size}x{size} RGB: {e}"))?;
    let mut opts =
        fr::ResizeOptions::new().resize_alg(fr::ResizeAlg::Convolution(fr::FilterType::Bilinear));
    if let Some((l, t, w, h)) = box_f {
        opts = opts.crop(l, t, w, h);
    }
    RESIZER.with(|cell| {
        let mut slot = cell.borrow_mut();
        let resizer = slot.get_or_insert_with(fr::Resizer::new);
        match crop {
            Some(c) => resizer.resize(&c, &mut dst, &opts),
            None => resizer.resize(src, &mut dst, &opts),
        }
        .map_err(|e| format!("resize to {size}x{size}: {e}"))
    })
}

/// torchvision `F.resized_crop(img, top, left, height, width, [size, size])` on a PIL image:
/// the crop (pixels outside it unused), then an antialiased bilinear resize into `out`
/// (`size * size * 3` bytes, HWC). `reduce` is the DCT reduction `src` was decoded with
/// (1 when it is full size): the crop, given in full-size pixels, is scaled to match. `src`
/// may be a region of the image ([`decode_region`] with [`crop_pad`]'s padding) holding the
/// crop.
pub fn resized_crop(
    src: &RgbPixels,
    crop: CropBox,
    reduce: u32,
    size: u32,
    out: &mut [u8],
) -> Result<(), String> {
    let view = src.view()?;
    let p = src.placement;
    let outside = || {
        format!(
            "crop {crop:?} (1/{reduce} scale) is outside the decoded {}x{} at ({}, {}) of {}x{}",
            src.width, src.height, p.left, p.top, p.image_width, p.image_height
        )
    };
    if reduce <= 1 {
        let (Some(left), Some(top)) = (crop.left.checked_sub(p.left), crop.top.checked_sub(p.top))
        else {
            return Err(outside());
        };
        let cropped = fr::images::CroppedImage::new(&view, left, top, crop.width, crop.height)
            .map_err(|e| format!("{}: {e}", outside()))?;
        return resize(&view, Some(cropped), None, size, out);
    }
    let r = reduce as f64;
    let (l, t) = (crop.left as f64 / r, crop.top as f64 / r);
    let w = (crop.width as f64 / r).min(p.image_width as f64 - l);
    let h = (crop.height as f64 / r).min(p.image_height as f64 - t);
    let (l, t) = (l - p.left as f64, t - p.top as f64);
    if l < 0.0 || t < 0.0 || l + w > src.width as f64 || t + h > src.height as f64 {
        return Err(outside());
    }
    resize(&view, None, Some((l, t, w, h)), size, out)
}

/// The pixels of the reduced image a [`resized_crop`] of `crop` at `reduce` reads beyond the
/// crop: none at full size (the crop is cut first), else the bilinear filter's support at the
/// reduction's scale, rounded up, plus one.
pub fn crop_pad(crop: CropBox, reduce: u32, size: u32) -> u32 {
    if reduce <= 1 {
        return 0;
    }
    crop.width
        .max(crop.height)
        .div_ceil(reduce)
        .div_ceil(size.max(1))
        + 1
}

/// The size torchvision's `Resize(short)` gives a `width`×`height` image: the shorter side
/// becomes `short`, the longer `int(short * long / shorter)` (truncated, as torchvision).
pub fn resize_shorter_to(width: u32, height: u32, short: u32) -> (u32, u32) {
    let scaled = |long: u32, shorter: u32| (short as f64 * long as f64 / shorter as f64) as u32;
    if width <= height {
        (short, scaled(height, width).max(1))
    } else {
        (scaled(width, height).max(1), short)
    }
}

/// torchvision's validation transform for `size` (224): `Resize(size * 256 / 224)` then
/// `CenterCrop(size)` (offsets rounded half to even, as Python's `round`), computed in one pass
/// into `out` (`size * size * 3` bytes, HWC): only the output pixels inside the crop are
/// resampled, with the resize's own filter positions and support (the same numbers as resizing
/// the whole image and cropping). `src` may be the region [`center_crop_region`] names.
pub fn resize_center_crop(src: &RgbPixels, size: u32, out: &mut [u8]) -> Result<(), String> {
    let p = src.placement;
    let (l, t, w, h) = center_crop_box(p.image_width, p.image_height, size);
    let view = src.view()?;
    resize(
        &view,
        None,
        Some((l - p.left as f64, t - p.top as f64, w, h)),
        size,
        out,
    )
}

/// The box of a `width`×`height` image that [`resize_center_crop`] resamples into its output
/// (left, top, width, height, in source pixels).
fn center_crop_box(width: u32, height: u32, size: u32) -> (f64, f64, f64, f64) {
    let short = (size * 256 / 224).max(size);
    let (nw, nh) = resize_shorter_to(width, height, short);
    let left = ((nw.saturating_sub(size)) as f64 / 2.0).round_ties_even();
    let top = ((nh.saturating_sub(size)) as f64 / 2.0).round_ties_even();
    let sx = width as f64 / nw as f64;
    let sy = height as f64 / nh as f64;
    let (cw, ch) = (size.min(nw) as f64, size.min(nh) as f64);
    (left * sx, top * sy, cw * sx, ch * sy)
}

/// The region of a `width`×`height` image [`resize_center_crop`] reads, and the padding for
/// [`decode_region`]: the centre crop's box and the filter's support at its scale.
pub fn center_crop_region(width: u32, height: u32, size: u32) -> (CropBox, u32) {
    let (l, t, w, h) = center_crop_box(width, height, size);
    let (left, top) = (l.floor() as u32, t.floor() as u32);
    let need = CropBox {
        left,
        top,
        width: ((l + w).ceil() as u32).min(width) - left,
        height: ((t + h).ceil() as u32).min(height) - top,
    };
    let scale = (w / size as f64).max(h / size as f64).max(1.0);
    (need, scale.ceil() as u32 + 1)
}

/// Mirror `height` rows of `width` RGB pixels left to right, in place.
pub fn flip_horizontal(pixels: &mut [u8], width: usize) {
    if width == 0 {
        return;
    }
    for row in pixels.chunks_exact_mut(width * 3) {
        let (mut i, mut j) = (0, width - 1);
        while i < j {
            for c in 0..3 {
                row.swap(i * 3 + c, j * 3 + c);
            }
            i += 1;
            j -= 1;
        }
    }
}

/// Per-channel normalisation of 8-bit pixels: `(x / 255 - mean) / std`, torchvision's
/// `ToTensor` + `Normalize(mean, std)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Normalize {
    pub mean: [f32; 3],
    pub std: [f32; 3],
}

impl Normalize {
    /// ImageNet's statistics.
    pub const IMAGENET: Normalize = Normalize {
        mean: IMAGENET_MEAN,
        std: IMAGENET_STD,
    };
    /// CIFAR-10's statistics.
    pub const CIFAR: Normalize = Normalize {
        mean: CIFAR_MEAN,
        std: CIFAR_STD,
    };

    /// The float value of channel `c` at level `v`, in f32 as the device computes it.
    pub fn value(&self, c: usize, v: u8) -> f32 {
        (v as f32 / 255.0 - self.mean[c]) / self.std[c]
    }

    /// [`Normalize::value`] of every level, per channel.
    pub fn lut(&self) -> [[f32; 256]; 3] {
        let mut lut = [[0f32; 256]; 3];
        for (c, table) in lut.iter_mut().enumerate() {
            for (v, x) in table.iter_mut().enumerate() {
                *x = self.value(c, v as u8);
            }
        }
        lut
    }

    /// HWC 8-bit pixels (3 channels) → CHW f32 normalised values, into `out` (same length).
    pub fn hwc_to_chw(&self, hwc: &[u8], out: &mut [f32]) {
        let lut = self.lut();
        let plane = hwc.len() / 3;
        let (r, rest) = out.split_at_mut(plane);
        let (g, b) = rest.split_at_mut(plane);
        for (i, px) in hwc.chunks_exact(3).enumerate() {
            r[i] = lut[0][px[0] as usize];
            g[i] = lut[1][px[1] as usize];
            b[i] = lut[2][px[2] as usize];
        }
    }
}

/// Normalises batches of 8-bit HWC pixels (`[n, h, w, 3]` uint8, already on the device) into a
/// model's float input `[n, 3, h, w]` there, in its memory format: channels-last strides
/// (nhwc) or contiguous (nchw). The arithmetic is [`Normalize::value`]'s, operation for
/// operation (true divisions by device tensors), so on the CPU the values are the host path's
/// bit for bit. The statistics are copied to the device once.
#[derive(Debug)]
pub struct DeviceNormalizer {
    norm: Normalize,
    /// (device, 255, mean, std) on that device.
    consts: Option<(Device, Tensor, Tensor, Tensor)>,
}

impl DeviceNormalizer {
    /// A normaliser with `norm`'s statistics.
    pub fn new(norm: Normalize) -> DeviceNormalizer {
        DeviceNormalizer { norm, consts: None }
    }

    /// The statistics it applies.
    pub fn normalize(&self) -> Normalize {
        self.norm
    }

    /// `images` (`[n, h, w, 3]` uint8) → normalised f32 `[n, 3, h, w]` on their device,
    /// channels-last when `channels_last`, else contiguous.
    pub fn apply(&mut self, images: &Tensor, channels_last: bool) -> Tensor {
        let device = images.device();
        if self.consts.as_ref().is_none_or(|c| c.0 != device) {
            let per_channel =
                |v: [f32; 3]| Tensor::from_slice(&v).view([1, 3, 1, 1]).to_device(device);
            self.consts = Some((
                device,
                Tensor::from_slice(&[255f32]).to_device(device),
                per_channel(self.norm.mean),
                per_channel(self.norm.std),
            ));
        }
        let nchw = images.permute([0, 3, 1, 2]);
        // uint8 reorders cost a quarter of float ones: settle the layout before converting.
        let nchw = if channels_last {
            nchw
        } else {
            nchw.contiguous()
        };
        let mut x = nchw.to_kind(Kind::Float);
        if let Some((_, k255, mean, std)) = &self.consts {
            let _ = x.g_div_(k255);
            let _ = x.g_sub_(mean);
            let _ = x.g_div_(std);
        }
        x
    }
}
