//! Image classification datasets: embedded synthetic data, ImageNet-layout image folders and
//! CIFAR-10 binary batches, each a [`Dataset`] for the parallel [`crate::Loader`].

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use modelzoo_engine::rng::SplitMix64;

use crate::loader::{Dataset, Sample, SampleError};
use crate::transforms::{
    center_crop_region, crop_pad, dct_reduction, decode, decode_region, flip_horizontal, jpeg_size,
    resize_center_crop, resized_crop, train_draws, Normalize, RgbPixels,
};

/// A dataset directory that cannot be used, with what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("dataset path {0} does not exist; pass --dataset_path <dir> (or leave it out for the synthetic set)")]
    Missing(PathBuf),
    #[error("dataset path {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("dataset path {0} is neither an ImageFolder (train/<class>/*.JPEG|png, val/<class>/...) nor CIFAR-10 binary (data_batch_1.bin ... test_batch.bin)")]
    UnknownLayout(PathBuf),
    #[error("{0} has no class directories; expected <split>/<class>/<image files>")]
    NoClasses(PathBuf),
    #[error("class directory {0} holds no .jpg/.jpeg/.png images")]
    EmptyClass(PathBuf),
    #[error("{train} and {val} have different class directories ({train_n} vs {val_n}); both splits need the same classes")]
    ClassMismatch {
        train: PathBuf,
        val: PathBuf,
        train_n: usize,
        val_n: usize,
    },
    #[error("{data} holds {found} classes but --num_classes is {num_classes}; pass --num_classes {found}")]
    TooManyClasses {
        data: PathBuf,
        found: usize,
        num_classes: usize,
    },
    #[error("the training set has {samples} samples, fewer than one batch of {batch_size} for each of {world} rank(s); lower --batch_size")]
    FewerThanOneBatch {
        samples: usize,
        batch_size: usize,
        world: usize,
    },
    #[error("{path}: {len} bytes is not a whole number of 3073-byte CIFAR-10 records")]
    CifarSize { path: PathBuf, len: u64 },
    #[error("{path}: label {label} at record {record} is not a CIFAR-10 class (0-9)")]
    CifarLabel {
        path: PathBuf,
        record: usize,
        label: u8,
    },
}

/// Which split of a dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    Train,
    Val,
}

// ---------------------------------------------------------------------------------------------
// Synthetic

/// Deterministic, learnable synthetic images: each class has a smooth random prototype (a coarse
/// 4×4 grid per channel, upsampled), and each sample is its class prototype plus per-pixel
/// Gaussian noise, so classes are separable but not trivially so.
pub struct Synthetic {
    prototypes: Vec<Vec<f32>>,
    size: usize,
    len: usize,
    /// Offset of this split's sample indices (val samples differ from train samples).
    offset: u64,
    seed: u64,
    noise: f32,
}

impl Synthetic {
    /// `len` samples of `size`×`size` over `num_classes` classes, all determined by `seed`.
    pub fn new(num_classes: usize, size: usize, len: usize, split: Split, seed: u64) -> Synthetic {
        const GRID: usize = 4;
        let prototypes = (0..num_classes)
            .map(|c| {
                let mut rng = SplitMix64::new(seed ^ 0xC1A5_5000 ^ ((c as u64) << 20));
                let grid: Vec<f32> = (0..3 * GRID * GRID).map(|_| rng.normal() as f32).collect();
                let mut img = vec![0f32; 3 * size * size];
                for ch in 0..3 {
                    for y in 0..size {
                        for x in 0..size {
                            let (gy, gx) = (y * GRID / size, x * GRID / size);
                            img[(ch * size + y) * size + x] = grid[(ch * GRID + gy) * GRID + gx];
                        }
                    }
                }
                img
            })
            .collect();
        Synthetic {
            prototypes,
            size,
            len,
            offset: match split {
                Split::Train => 0,
                Split::Val => 1 << 40,
            },
            seed,
            noise: 1.0,
        }
    }
}

impl Dataset for Synthetic {
    fn len(&self) -> usize {
        self.len
    }
    fn sample_shape(&self) -> [usize; 3] {
        [3, self.size, self.size]
    }
    fn load(&self, index: usize, _rng: &mut SplitMix64) -> Result<Sample, SampleError> {
        let label = index % self.prototypes.len();
        let mut rng = SplitMix64::new(
            self.seed
                .wrapping_mul(31)
                .wrapping_add(self.offset + index as u64),
        );
        let pixels = self.prototypes[label]
            .iter()
            .map(|p| p + self.noise * rng.normal() as f32)
            .collect();
        Ok(Sample {
            pixels,
            label: label as i64,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// ImageFolder

/// `root/<class>/<image>` files (ImageNet layout), with torchvision's train transforms
/// (`RandomResizedCrop(size)`, `RandomHorizontalFlip()`) or val transforms
/// (`Resize(size * 256 / 224)`, `CenterCrop(size)`), then ImageNet's `Normalize` — on the
/// host for [`Dataset::load`], on the device for [`Dataset::load_u8`]'s pixels.
pub struct ImageFolder {
    files: Vec<(PathBuf, i64)>,
    classes: Vec<String>,
    split: Split,
    size: usize,
    dct_scaling: bool,
}

/// The largest decoded-image buffer a loader thread keeps between files (4096 × 4096 RGB).
const KEEP_DECODED_BYTES: usize = 48 << 20;

thread_local! {
    /// Each loader thread's decoded image, reused from one file to the next.
    static DECODED: RefCell<RgbPixels> = RefCell::new(RgbPixels::default());
}

/// The largest image file read: ImageNet's largest JPEG is about 15 MB and the decoder's own
/// limit is far below what a larger file could hold, so a bigger "image" is refused before it
/// is read (two 2 GB files named `.jpg` once took run_resnet to 4.4 GB). docs/run_resnet.md,
/// "Input bounds".
pub const MAX_IMAGE_BYTES: u64 = 64 << 20;

/// The bytes of an image file, checked before it is read whole: a regular file (a FIFO named
/// `.jpg` would block a loader thread), at most [`MAX_IMAGE_BYTES`], and starting with a JPEG or
/// PNG signature (what the decoder reads), so a large file of anything else is never read past
/// its first bytes. The error is the reason, for the loader's skip message.
pub fn read_image(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut file = modelzoo_support::input::open_bounded(path, MAX_IMAGE_BYTES, "image")
        .map_err(|e| e.reason())?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut bytes = Vec::with_capacity(8);
    (&mut file)
        .take(8)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    const JPEG: &[u8] = &[0xff, 0xd8, 0xff];
    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";
    if !(bytes.starts_with(JPEG) || bytes.starts_with(PNG)) {
        return Err(format!(
            "not a JPEG or PNG image (it starts with {:02x?}): not read further",
            &bytes[..bytes.len().min(8)]
        ));
    }
    bytes.reserve(size.min(MAX_IMAGE_BYTES) as usize);
    file.take(MAX_IMAGE_BYTES + 1 - bytes.len() as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(format!(
            "grew past {MAX_IMAGE_BYTES} bytes, the most an image may be, while it was read"
        ));
    }
    Ok(bytes)
}

fn is_image(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "jpg" | "jpeg" | "png"))
}

fn read_dir_sorted(dir: &Path) -> Result<Vec<PathBuf>, DataError> {
    let io = |source| DataError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io)? {
        v.push(e.map_err(io)?.path());
    }
    v.sort();
    Ok(v)
}

impl ImageFolder {
    /// Scan `root` (one split directory). Every class directory must hold at least one image.
    pub fn scan(root: &Path, split: Split, size: usize) -> Result<ImageFolder, DataError> {
        if !root.is_dir() {
            return Err(DataError::Missing(root.to_path_buf()));
        }
        let class_dirs: Vec<PathBuf> = read_dir_sorted(root)?
            .into_iter()
            .filter(|p| p.is_dir())
            .collect();
        if class_dirs.is_empty() {
            return Err(DataError::NoClasses(root.to_path_buf()));
        }
        let mut files = Vec::new();
        let mut classes = Vec::new();
        for (label, dir) in class_dirs.iter().enumerate() {
            let imgs: Vec<PathBuf> = read_dir_sorted(dir)?
                .into_iter()
                .filter(|p| p.is_file() && is_image(p))
                .collect();
            if imgs.is_empty() {
                return Err(DataError::EmptyClass(dir.clone()));
            }
            classes.push(
                dir.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
            );
            files.extend(imgs.into_iter().map(|p| (p, label as i64)));
        }
        Ok(ImageFolder {
            files,
            classes,
            split,
            size,
            dct_scaling: true,
        })
    }

    /// Whether a training crop at least twice the output size is decoded reduced in the DCT
    /// (libjpeg-turbo's 1/2, 1/4, 1/8 scaling; see `transforms::dct_reduction`): on by
    /// default; off, every image is decoded at full size as torchvision does.
    pub fn with_dct_scaling(mut self, on: bool) -> ImageFolder {
        self.dct_scaling = on;
        self
    }

    /// Class names (directory names) in label order.
    pub fn classes(&self) -> &[String] {
        &self.classes
    }
}

impl Dataset for ImageFolder {
    fn len(&self) -> usize {
        self.files.len()
    }
    fn sample_shape(&self) -> [usize; 3] {
        [3, self.size, self.size]
    }
    fn load(&self, index: usize, rng: &mut SplitMix64) -> Result<Sample, SampleError> {
        float_sample(self, index, rng)
    }
    fn normalization(&self) -> Option<Normalize> {
        Some(Normalize::IMAGENET)
    }
    fn load_u8(
        &self,
        index: usize,
        rng: &mut SplitMix64,
        out: &mut [u8],
    ) -> Result<i64, SampleError> {
        let (path, label) = &self.files[index];
        let err = |reason: String| SampleError {
            index,
            source_name: path.display().to_string(),
            reason,
        };
        let size = self.size as u32;
        if out.len() != self.size * self.size * 3 {
            return Err(err(format!(
                "output slot of {} bytes, expected {size}x{size}x3",
                out.len()
            )));
        }
        let bytes = read_image(path).map_err(err)?;
        DECODED
            .with(|cell| {
                let mut px = cell.borrow_mut();
                match self.split {
                    Split::Train => {
                        // A JPEG header gives the size, so the crop is known before decoding:
                        // only its region is decoded, reduced when it is large.
                        let (crop, flip, reduce) = match jpeg_size(&bytes) {
                            Some((w, h)) => {
                                let (crop, flip) = train_draws(w, h, rng);
                                let reduce = if self.dct_scaling {
                                    dct_reduction(crop, size)
                                } else {
                                    1
                                };
                                let pad = crop_pad(crop, reduce, size);
                                decode_region(&bytes, reduce, crop, pad, &mut px)?;
                                (crop, flip, reduce)
                            }
                            None => {
                                decode(&bytes, 1, &mut px)?;
                                let (crop, flip) = train_draws(px.width, px.height, rng);
                                (crop, flip, 1)
                            }
                        };
                        resized_crop(&px, crop, reduce, size, out)?;
                        if flip {
                            flip_horizontal(out, self.size);
                        }
                    }
                    Split::Val => {
                        match jpeg_size(&bytes) {
                            Some((w, h)) => {
                                let (need, pad) = center_crop_region(w, h, size);
                                decode_region(&bytes, 1, need, pad, &mut px)?;
                            }
                            None => decode(&bytes, 1, &mut px)?,
                        }
                        resize_center_crop(&px, size, out)?;
                    }
                }
                // A huge image's buffer is not kept for the next (ImageNet-sized) one.
                if px.data.capacity() > KEEP_DECODED_BYTES {
                    *px = RgbPixels::default();
                }
                Ok(*label)
            })
            .map_err(err)
    }
}

/// A dataset's float sample from its uint8 pixels ([`Dataset::load_u8`] normalised on the host
/// with [`Dataset::normalization`], CHW).
fn float_sample<D: Dataset + ?Sized>(
    data: &D,
    index: usize,
    rng: &mut SplitMix64,
) -> Result<Sample, SampleError> {
    let [c, h, w] = data.sample_shape();
    let mut hwc = vec![0u8; c * h * w];
    let label = data.load_u8(index, rng, &mut hwc)?;
    let mut pixels = vec![0f32; c * h * w];
    data.normalization()
        .unwrap_or(Normalize::IMAGENET)
        .hwc_to_chw(&hwc, &mut pixels);
    Ok(Sample { pixels, label })
}

// ---------------------------------------------------------------------------------------------
// CIFAR-10

/// CIFAR-10 binary version: records of 1 label byte + 3072 pixel bytes (R, G, B planes of
/// 32×32). Train: `data_batch_*.bin` (random crop with 4-pixel padding + flip); val:
/// `test_batch.bin`.
pub struct Cifar10 {
    records: Vec<u8>,
    split: Split,
}

const CIFAR_RECORD: usize = 3073;

impl Cifar10 {
    /// Whether `root` looks like the CIFAR-10 binary layout.
    pub fn detect(root: &Path) -> bool {
        root.join("data_batch_1.bin").is_file() || root.join("test_batch.bin").is_file()
    }

    /// Load a split fully into memory (180 MB for the real training set).
    pub fn load(root: &Path, split: Split) -> Result<Cifar10, DataError> {
        let files: Vec<PathBuf> = match split {
            Split::Train => read_dir_sorted(root)?
                .into_iter()
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("data_batch_") && n.ends_with(".bin"))
                })
                .collect(),
            Split::Val => vec![root.join("test_batch.bin")],
        };
        if files.is_empty() {
            return Err(DataError::Missing(root.join("data_batch_1.bin")));
        }
        let mut records = Vec::new();
        for f in files {
            // A regular file (a FIFO would block) of at most 1 GiB (a CIFAR-10 batch is 30 MB).
            let bytes = modelzoo_support::input::read_bounded(&f, 1 << 30, "CIFAR-10 batch")
                .map_err(|e| {
                    if e.is_not_found() {
                        DataError::Missing(f.clone())
                    } else {
                        DataError::Io {
                            path: f.clone(),
                            source: e.into_io_reason(),
                        }
                    }
                })?;
            if bytes.is_empty() || bytes.len() % CIFAR_RECORD != 0 {
                return Err(DataError::CifarSize {
                    path: f,
                    len: bytes.len() as u64,
                });
            }
            if let Some((record, rec)) = bytes
                .chunks(CIFAR_RECORD)
                .enumerate()
                .find(|(_, r)| r[0] > 9)
            {
                return Err(DataError::CifarLabel {
                    path: f,
                    record,
                    label: rec[0],
                });
            }
            records.extend_from_slice(&bytes);
        }
        Ok(Cifar10 { records, split })
    }
}

impl Dataset for Cifar10 {
    fn len(&self) -> usize {
        self.records.len() / CIFAR_RECORD
    }
    fn sample_shape(&self) -> [usize; 3] {
        [3, 32, 32]
    }
    fn load(&self, index: usize, rng: &mut SplitMix64) -> Result<Sample, SampleError> {
        float_sample(self, index, rng)
    }
    fn normalization(&self) -> Option<Normalize> {
        Some(Normalize::CIFAR)
    }
    fn load_u8(
        &self,
        index: usize,
        rng: &mut SplitMix64,
        out: &mut [u8],
    ) -> Result<i64, SampleError> {
        if out.len() != 3072 {
            return Err(SampleError {
                index,
                source_name: format!("CIFAR-10 record {index}"),
                reason: format!("output slot of {} bytes, expected 32x32x3", out.len()),
            });
        }
        let rec = &self.records[index * CIFAR_RECORD..(index + 1) * CIFAR_RECORD];
        let px = &rec[1..];
        let (dx, dy, flip) = match self.split {
            Split::Train => (
                rng.below(9) as i64 - 4,
                rng.below(9) as i64 - 4,
                rng.next_f64() < 0.5,
            ),
            Split::Val => (0, 0, false),
        };
        for y in 0..32i64 {
            for x in 0..32i64 {
                let sx = if flip { 31 - x } else { x } + dx;
                let sy = y + dy;
                let inside = (0..32).contains(&sx) && (0..32).contains(&sy);
                for c in 0..3usize {
                    // torchvision RandomCrop(padding=4) pads the raw image with black.
                    out[(y * 32 + x) as usize * 3 + c] = if inside {
                        px[c * 1024 + (sy * 32 + sx) as usize]
                    } else {
                        0
                    };
                }
            }
        }
        Ok(rec[0] as i64)
    }
}

/// A dataset the loader threads share.
pub type SharedDataset = Arc<dyn Dataset>;

/// The train and validation sets of a `run_<model>`: `root` as CIFAR-10 binary or an
/// ImageFolder (`train/`, `val/`), or without it the synthetic set (`synthetic_samples` to
/// train, a quarter of that to validate). Classes must fit the classifier's `num_classes`.
pub fn train_and_val(
    root: Option<&Path>,
    synthetic_samples: usize,
    num_classes: usize,
    image_size: usize,
    seed: u64,
) -> Result<(SharedDataset, SharedDataset), DataError> {
    let Some(root) = root else {
        let n = synthetic_samples;
        return Ok((
            Arc::new(Synthetic::new(
                num_classes,
                image_size,
                n,
                Split::Train,
                seed,
            )),
            Arc::new(Synthetic::new(
                num_classes,
                image_size,
                (n / 4).max(1),
                Split::Val,
                seed,
            )),
        ));
    };
    if !root.exists() {
        return Err(DataError::Missing(root.to_path_buf()));
    }
    if Cifar10::detect(root) {
        if num_classes < 10 {
            return Err(DataError::TooManyClasses {
                data: root.to_path_buf(),
                found: 10,
                num_classes,
            });
        }
        return Ok((
            Arc::new(Cifar10::load(root, Split::Train)?),
            Arc::new(Cifar10::load(root, Split::Val)?),
        ));
    }
    let (train_dir, val_dir) = (root.join("train"), root.join("val"));
    if !train_dir.is_dir() {
        return Err(DataError::UnknownLayout(root.to_path_buf()));
    }
    let train = ImageFolder::scan(&train_dir, Split::Train, image_size)?;
    let val = ImageFolder::scan(&val_dir, Split::Val, image_size)?;
    if train.classes() != val.classes() {
        return Err(DataError::ClassMismatch {
            train: train_dir,
            val: val_dir,
            train_n: train.classes().len(),
            val_n: val.classes().len(),
        });
    }
    if train.classes().len() > num_classes {
        return Err(DataError::TooManyClasses {
            data: train_dir,
            found: train.classes().len(),
            num_classes,
        });
    }
    Ok((Arc::new(train), Arc::new(val)))
}
