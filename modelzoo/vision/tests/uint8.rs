//! Issue #26: the uint8 path. Batches of 8-bit pixels normalised by `DeviceNormalizer` (here on
//! the CPU) equal the float batches the loader threads normalise — stated tolerance 1e-6
//! absolute (the arithmetic is the same operation for operation, so on the CPU it is exact) —
//! in both memory formats; corrupt and truncated JPEG files are skipped and counted.

use std::path::Path;
use std::sync::Arc;

use modelzoo_engine::BatchSource;
use modelzoo_vision::{
    BatchPixels, Cifar10, Dataset, DeviceNormalizer, ImageFolder, Loader, LoaderOptions, Split,
    Synthetic,
};
use tch::{Kind, Tensor};

fn write_jpeg(path: &Path, w: u32, h: u32, seed: u32) {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        let v = |k: u32| ((x * (k + seed) + y * (2 * k + 1) + (x * y) / (k + 3)) % 256) as u8;
        image::Rgb([v(1), v(2), v(3)])
    });
    let mut bytes = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, 90)
        .encode_image(&img)
        .unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn folder(root: &Path) {
    for (c, class) in ["a", "b"].iter().enumerate() {
        let d = root.join(class);
        std::fs::create_dir_all(&d).unwrap();
        for i in 0..5u32 {
            let (w, h) = [(120, 90), (90, 130), (64, 64), (200, 150), (75, 100)][i as usize];
            write_jpeg(&d.join(format!("{i}.JPEG")), w, h, i + 7 * c as u32);
        }
    }
}

fn opts(workers: usize) -> LoaderOptions {
    LoaderOptions {
        batch_size: 4,
        shuffle: true,
        drop_last: false,
        num_workers: workers,
        prefetch: 2,
        seed: 5,
    }
}

/// Every batch of epoch 1, as (images, labels).
fn batches(l: &Loader) -> Vec<(Tensor, Vec<i64>)> {
    l.epoch(1, 0)
        .map(|b| (b.images, Vec::<i64>::try_from(&b.labels).unwrap()))
        .collect()
}

fn max_abs(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!(a.size(), b.size());
    (a - b).abs().max().double_value(&[])
}

/// Float, float channels-last and uint8 (+ DeviceNormalizer, both formats) batches of `data`
/// agree.
fn check_three_ways(data: Arc<dyn Dataset>, what: &str) {
    let [c, h, w] = data.sample_shape();
    let (c, h, w) = (c as i64, h as i64, w as i64);
    let float = Loader::new(Arc::clone(&data), opts(2));
    let cl = Loader::new(Arc::clone(&data), opts(2)).pixels(BatchPixels::FloatChannelsLast);
    let u8s = Loader::new(Arc::clone(&data), opts(3)).pixels(BatchPixels::Uint8);
    assert_eq!(cl.batch_pixels(), BatchPixels::FloatChannelsLast);
    assert_eq!(float.normalization(), None);
    let mut norm = DeviceNormalizer::new(u8s.normalization().expect("uint8 batches"));
    let (f, l, u) = (batches(&float), batches(&cl), batches(&u8s));
    assert!(!f.is_empty());
    assert_eq!(f.len(), u.len());
    for (i, ((fx, fl), ((lx, ll), (ux, ul)))) in f.iter().zip(l.iter().zip(&u)).enumerate() {
        assert_eq!((fl, ll), (ul, ul), "{what} batch {i}: labels");
        let n = fl.len() as i64;
        assert_eq!(ux.kind(), Kind::Uint8);
        assert_eq!(ux.size(), [n, h, w, c], "{what}: uint8 batches are NHWC");
        assert_eq!(
            fx.stride(),
            [c * h * w, h * w, w, 1],
            "{what}: float is NCHW"
        );
        assert_eq!(lx.size(), [n, c, h, w]);
        assert_eq!(
            lx.stride(),
            [c * h * w, 1, w * c, c],
            "{what}: channels-last strides"
        );
        let nchw = norm.apply(ux, false);
        let nhwc = norm.apply(ux, true);
        assert_eq!(
            nchw.stride(),
            fx.stride(),
            "{what}: nchw normalised is contiguous"
        );
        assert_eq!(
            nhwc.stride(),
            lx.stride(),
            "{what}: nhwc normalised keeps channels-last"
        );
        for (name, x) in [
            ("float channels-last", lx),
            ("uint8 nchw", &nchw),
            ("uint8 nhwc", &nhwc),
        ] {
            let d = max_abs(fx, x);
            assert!(
                d <= 1e-6,
                "{what} batch {i}: {name} differs from float by {d}"
            );
        }
    }
}

#[test]
fn image_folder_uint8_batches_normalised_on_the_device_equal_the_float_batches() {
    let dir = tempfile::tempdir().unwrap();
    folder(dir.path());
    for split in [Split::Train, Split::Val] {
        let data = Arc::new(ImageFolder::scan(dir.path(), split, 48).unwrap());
        check_three_ways(data, &format!("ImageFolder {split:?}"));
    }
}

#[test]
fn cifar_uint8_batches_normalised_on_the_device_equal_the_float_batches() {
    let dir = tempfile::tempdir().unwrap();
    let records: Vec<u8> = (0..12u32)
        .flat_map(|i| {
            let mut r = vec![(i % 10) as u8];
            r.extend((0..3072u32).map(|p| ((p * (i + 3) + p / 7) % 256) as u8));
            r
        })
        .collect();
    std::fs::write(dir.path().join("data_batch_1.bin"), &records).unwrap();
    std::fs::write(dir.path().join("test_batch.bin"), &records).unwrap();
    for split in [Split::Train, Split::Val] {
        let data = Arc::new(Cifar10::load(dir.path(), split).unwrap());
        check_three_ways(data, &format!("CIFAR-10 {split:?}"));
    }
}

#[test]
fn synthetic_data_stays_float_and_uint8_batches_are_deterministic_across_workers() {
    let syn = Loader::new(Arc::new(Synthetic::new(3, 8, 12, Split::Train, 1)), opts(1))
        .pixels(BatchPixels::Uint8);
    assert_eq!(syn.batch_pixels(), BatchPixels::Float);
    assert_eq!(syn.normalization(), None);

    let dir = tempfile::tempdir().unwrap();
    folder(dir.path());
    let data: Arc<dyn Dataset> = Arc::new(ImageFolder::scan(dir.path(), Split::Train, 32).unwrap());
    let serial = batches(&Loader::new(Arc::clone(&data), opts(0)).pixels(BatchPixels::Uint8));
    let parallel = batches(&Loader::new(data, opts(3)).pixels(BatchPixels::Uint8));
    assert_eq!(serial.len(), parallel.len());
    for ((a, la), (b, lb)) in serial.iter().zip(&parallel) {
        assert_eq!(la, lb);
        assert!(a.equal(b), "same seed, same pixels whatever the workers");
    }
}

#[test]
fn corrupt_and_truncated_jpegs_are_skipped_and_counted_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    folder(dir.path());
    let good = std::fs::read(dir.path().join("a/3.JPEG")).unwrap();
    std::fs::write(dir.path().join("a/cut.JPEG"), &good[..good.len() * 2 / 3]).unwrap();
    std::fs::write(dir.path().join("b/junk.JPEG"), b"not a jpeg").unwrap();
    for pixels in [
        BatchPixels::Float,
        BatchPixels::FloatChannelsLast,
        BatchPixels::Uint8,
    ] {
        let data = Arc::new(ImageFolder::scan(dir.path(), Split::Train, 32).unwrap());
        assert_eq!(data.len(), 12);
        let l = Loader::new(data, opts(2)).pixels(pixels);
        let n: usize = batches(&l).iter().map(|(_, labels)| labels.len()).sum();
        assert_eq!(n, 10, "{pixels:?}: the 10 good images");
        assert_eq!(l.skipped(), 2, "{pixels:?}");
        let first = BatchSource::first_skip(&l).unwrap();
        assert!(
            first.contains("cut.JPEG") && first.contains("Premature end of JPEG file")
                || first.contains("junk.JPEG") && first.contains("not a JPEG or PNG image"),
            "{first}"
        );
    }
    // Skipped samples leave their slots to the next ones: what the batches show is every path's
    // same good images, nothing left over in the (uninitialised) batch memory.
    let data = Arc::new(ImageFolder::scan(dir.path(), Split::Train, 32).unwrap());
    check_three_ways(data, "ImageFolder with a corrupt and a truncated file");
}

/// Batches pinned for a CUDA device hold the values of pageable ones, pinned where a CUDA device
/// can pin them; where none can (a machine without a GPU) they stay pageable and loading goes on.
#[test]
fn batches_pinned_for_cuda_hold_the_same_values() {
    let dir = tempfile::tempdir().unwrap();
    folder(dir.path());
    let data: Arc<dyn Dataset> = Arc::new(ImageFolder::scan(dir.path(), Split::Train, 32).unwrap());
    let cuda = tch::Device::Cuda(0);
    let plain = batches(&Loader::new(Arc::clone(&data), opts(2)).pixels(BatchPixels::Uint8));
    let loader = Loader::new(data, opts(2))
        .pixels(BatchPixels::Uint8)
        .pinned_for(Some(cuda));
    let pinned: Vec<_> = loader.epoch(1, 0).collect();
    assert_eq!(plain.len(), pinned.len());
    let can_pin = tch::Cuda::is_available();
    for ((images, labels), b) in plain.iter().zip(&pinned) {
        assert_eq!(labels, &Vec::<i64>::try_from(&b.labels).unwrap());
        assert!(images.equal(&b.images), "pinning changes no value");
        assert_eq!(b.images.is_pinned(cuda), can_pin);
    }
}

/// Issue #38 D12/C9: an image file is checked before it is read whole — one past the bound
/// (sparse, with a JPEG signature) is refused from its size, a large file without a JPEG or PNG
/// signature after its first 8 bytes, a FIFO named `.jpg` at once — and the loader skips each
/// with that reason.
#[test]
fn image_files_are_checked_before_they_are_read_whole() {
    use modelzoo_vision::datasets::{read_image, MAX_IMAGE_BYTES};
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.jpg");
    std::fs::write(&big, [0xff, 0xd8, 0xff, 0xe0]).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&big)
        .unwrap()
        .set_len(MAX_IMAGE_BYTES + 1)
        .unwrap();
    let err = read_image(&big).unwrap_err();
    assert!(err.contains("larger than 67108864 bytes"), "{err}");
    let foreign = dir.path().join("foreign.jpg");
    std::fs::File::create(&foreign)
        .unwrap()
        .set_len(MAX_IMAGE_BYTES)
        .unwrap();
    let err = read_image(&foreign).unwrap_err();
    assert!(err.contains("not a JPEG or PNG image"), "{err}");
    let fifo = dir.path().join("pipe.jpg");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(read_image(&fifo).unwrap_err()).unwrap());
    let err = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("blocked on a FIFO");
    assert!(err.contains("a FIFO"), "{err}");
    write_jpeg(&dir.path().join("ok.jpg"), 8, 8, 1);
    assert!(read_image(&dir.path().join("ok.jpg")).is_ok());
}
