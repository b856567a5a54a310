//! The environment report behind `modelzoo env`: the table torch_sdaa prints at import
//! (same rows, same layout), then the CPU and CUDA facts. Gathering never fails: whatever
//! cannot be found is `None` and prints as `N/A`, with the reason in `sdaa_error`.

use std::fmt;
use std::os::raw::{c_char, c_int, c_uint};
use std::path::PathBuf;

use serde::Serialize;

use crate::{cuda, sdaa, OpenOptions};

/// One library row: version text and the file it came from.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct LibraryRow {
    /// Row label as torch_sdaa prints it ("SDAA Runtime", "TecoDNN", ...).
    pub name: String,
    pub version: Option<String>,
    pub path: Option<PathBuf>,
}

/// One CUDA device as the driver reports it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct CudaDevice {
    pub index: usize,
    pub name: String,
    pub total_memory_bytes: u64,
}

/// Everything `modelzoo env` prints.
#[derive(Debug, Clone, Serialize)]
pub struct EnvReport {
    pub host_ip: Option<String>,
    pub pytorch: LibraryRow,
    pub torch_sdaa: LibraryRow,
    pub sdaa_driver: Option<String>,
    /// SDAA Runtime, SDPTI, TecoDNN, TecoBLAS, CustomDNN, TecoRAND, TCCL — in banner order.
    pub sdaa_libraries: Vec<LibraryRow>,
    pub sdaa_device_count: Option<usize>,
    /// Why the SDAA rows are N/A, when they are.
    pub sdaa_error: Option<String>,
    pub sdaa_search_dirs: Vec<PathBuf>,
    /// True when the loaded SDAA stack is the emulator (its versions say "emulator").
    pub sdaa_is_emulator: bool,
    pub cpu_model: Option<String>,
    pub cpu_threads: usize,
    pub cuda_driver: Option<String>,
    pub cuda_devices: Vec<CudaDevice>,
    /// libtorch_cuda.so of the libtorch in use (loaded only when `--device cuda` asks).
    pub libtorch_cuda: Option<PathBuf>,
    pub cuda_error: Option<String>,
}

/// The banner's rows after the separator: label and library file.
const SDAA_ROWS: [(&str, &str); 7] = [
    ("SDAA Runtime", "libsdaart.so"),
    ("SDPTI", "libsdpti.so"),
    ("TecoDNN", "libtecodnn.so"),
    ("TecoBLAS", "libtecoblas.so"),
    ("CustomDNN", "libtecodnn_ext.so"),
    ("TecoRAND", "libtecorand.so"),
    ("TCCL", "libtccl.so"),
];

/// Gather the report (loads the SDAA libraries and plugin if they can be found).
pub fn env_report(opts: &OpenOptions) -> EnvReport {
    let torch_dir = cuda::libtorch_lib_dir();
    let pytorch = LibraryRow {
        name: "PyTorch".into(),
        version: Some(cuda::torch_version()),
        path: torch_dir.as_ref().map(|d| d.join("libtorch_cpu.so")),
    };
    let mut torch_sdaa = LibraryRow {
        name: "Torch-SDAA".into(),
        version: None,
        path: None,
    };
    let mut sdaa_error = None;
    let mut sdaa_driver = None;
    let mut sdaa_device_count = None;
    let mut rows: Vec<LibraryRow> = SDAA_ROWS
        .iter()
        .map(|(name, _)| LibraryRow {
            name: name.to_string(),
            version: None,
            path: None,
        })
        .collect();
    let libs = match sdaa::load(opts) {
        Ok(s) => {
            torch_sdaa.version = s.plugin.version.clone().or_else(|| Some("unknown".into()));
            torch_sdaa.path = Some(s.plugin.path.clone());
            Ok(s)
        }
        Err(e) => {
            sdaa_error = Some(e.to_string());
            Err(())
        }
    };
    // Returns why the runtime cannot count its devices (e.g. the emulator's setting that is
    // not valid), which the report shows as the SDAA error.
    let fill = |l: &sdaa::SdaaLibraries,
                rows: &mut Vec<LibraryRow>,
                driver: &mut Option<String>,
                count: &mut Option<usize>|
     -> Option<String> {
        for (row, (_, file)) in rows.iter_mut().zip(SDAA_ROWS) {
            row.path = l.path_of(file).map(|p| p.to_path_buf());
            if row.path.is_some() {
                row.version = l.version_of(file).or_else(|| Some("unknown".into()));
            }
        }
        *driver = l.driver_version();
        match l.device_count() {
            Ok(n) => {
                *count = Some(n);
                None
            }
            Err(e) => Some(e.to_string()),
        }
    };
    let count_error = match &libs {
        Ok(s) => fill(
            &s.libraries,
            &mut rows,
            &mut sdaa_driver,
            &mut sdaa_device_count,
        ),
        // The plugin may be what failed: still report the libraries if they load.
        Err(()) => sdaa::SdaaLibraries::load()
            .ok()
            .and_then(|l| fill(&l, &mut rows, &mut sdaa_driver, &mut sdaa_device_count)),
    };
    if sdaa_error.is_none() {
        sdaa_error = count_error;
    }
    let sdaa_is_emulator = rows
        .iter()
        .chain(std::iter::once(&torch_sdaa))
        .any(|r| r.version.as_deref().is_some_and(|v| v.contains("emulator")));
    let (cuda_driver, cuda_devices, cuda_error) = match cuda_driver_info() {
        Ok((driver, devices)) => (Some(driver), devices, None),
        Err(e) => (None, Vec::new(), Some(e)),
    };
    EnvReport {
        host_ip: host_ip(),
        pytorch,
        torch_sdaa,
        sdaa_driver,
        sdaa_libraries: rows,
        sdaa_device_count,
        sdaa_error,
        sdaa_search_dirs: sdaa::search_dirs(),
        sdaa_is_emulator,
        cpu_model: cpu_model(),
        cpu_threads: tch::get_num_threads().max(1) as usize,
        cuda_driver,
        cuda_devices,
        libtorch_cuda: torch_dir
            .map(|d| d.join("libtorch_cuda.so"))
            .filter(|p| p.is_file()),
        cuda_error,
    }
}

const SEPARATOR: &str = "--------------+------------------------------------------------";

fn row(f: &mut fmt::Formatter<'_>, label: &str, value: &str) -> fmt::Result {
    writeln!(f, " {label:<13}| {value}")
}

fn lib_value(r: &LibraryRow) -> String {
    match (&r.version, &r.path) {
        (Some(v), Some(p)) => format!("{v} ({})", p.display()),
        (Some(v), None) => format!("{v} (N/A)"),
        _ => "N/A".to_string(),
    }
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

impl fmt::Display for EnvReport {
    /// The torch_sdaa banner layout, then CPU and CUDA sections in the same style.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{SEPARATOR}")?;
        row(f, "Host IP", self.host_ip.as_deref().unwrap_or("N/A"))?;
        row(f, "PyTorch", &lib_value(&self.pytorch))?;
        row(f, "Torch-SDAA", &lib_value(&self.torch_sdaa))?;
        writeln!(f, "{SEPARATOR}")?;
        match &self.sdaa_driver {
            Some(v) => row(f, "SDAA Driver", &format!("{v} (N/A)"))?,
            None => row(f, "SDAA Driver", "N/A")?,
        }
        for r in &self.sdaa_libraries {
            row(f, &r.name, &lib_value(r))?;
        }
        writeln!(f, "{SEPARATOR}")?;
        let cpu = match &self.cpu_model {
            Some(m) => format!("{m} ({} threads)", self.cpu_threads),
            None => format!("{} threads", self.cpu_threads),
        };
        row(f, "CPU", &cpu)?;
        row(
            f,
            "SDAA Devices",
            &self.sdaa_device_count.map_or("N/A".to_string(), |n| {
                if self.sdaa_is_emulator {
                    format!("{n} (EMULATOR, not SDAA hardware)")
                } else {
                    n.to_string()
                }
            }),
        )?;
        row(
            f,
            "CUDA Driver",
            self.cuda_driver.as_deref().unwrap_or("N/A"),
        )?;
        if self.cuda_devices.is_empty() {
            row(
                f,
                "CUDA Devices",
                if self.cuda_driver.is_some() {
                    "0"
                } else {
                    "N/A"
                },
            )?;
        }
        for d in &self.cuda_devices {
            row(
                f,
                &format!("CUDA {}", d.index),
                &format!("{} ({})", d.name, gib(d.total_memory_bytes)),
            )?;
        }
        row(
            f,
            "Torch-CUDA",
            &self
                .libtorch_cuda
                .as_ref()
                .map_or("N/A".to_string(), |p| p.display().to_string()),
        )?;
        writeln!(f, "{SEPARATOR}")?;
        if let Some(e) = &self.sdaa_error {
            writeln!(f, "SDAA: {e}")?;
        }
        Ok(())
    }
}

/// First non-loopback IPv4 address of the host.
fn host_ip() -> Option<String> {
    let mut addrs: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a linked list we walk read-only and free once.
    if unsafe { libc::getifaddrs(&mut addrs) } != 0 {
        return None;
    }
    let mut found = None;
    let mut cur = addrs;
    while !cur.is_null() {
        let ifa = unsafe { &*cur };
        if !ifa.ifa_addr.is_null()
            && c_int::from(unsafe { (*ifa.ifa_addr).sa_family }) == libc::AF_INET
        {
            let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
            let ip = std::net::Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
            if !ip.is_loopback() {
                found = Some(ip.to_string());
                break;
            }
        }
        cur = ifa.ifa_next;
    }
    unsafe { libc::freeifaddrs(addrs) };
    found
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// CUDA facts from the driver API (libcuda.so.1), without loading libtorch_cuda.
pub(crate) fn cuda_driver_info() -> Result<(String, Vec<CudaDevice>), String> {
    type CuInit = unsafe extern "C" fn(c_uint) -> c_int;
    type CuCount = unsafe extern "C" fn(*mut c_int) -> c_int;
    type CuName = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> c_int;
    type CuMem = unsafe extern "C" fn(*mut usize, c_int) -> c_int;
    type CuVersion = unsafe extern "C" fn(*mut c_int) -> c_int;
    // SAFETY: the NVIDIA driver library by its system name; symbols per the CUDA driver API.
    let lib = unsafe { libloading::Library::new("libcuda.so.1") }
        .map_err(|e| format!("no NVIDIA driver (libcuda.so.1): {e}"))?;
    unsafe {
        let init: libloading::Symbol<CuInit> = lib.get(b"cuInit").map_err(|e| e.to_string())?;
        let count: libloading::Symbol<CuCount> =
            lib.get(b"cuDeviceGetCount").map_err(|e| e.to_string())?;
        let name: libloading::Symbol<CuName> =
            lib.get(b"cuDeviceGetName").map_err(|e| e.to_string())?;
        let mem: libloading::Symbol<CuMem> =
            lib.get(b"cuDeviceTotalMem_v2").map_err(|e| e.to_string())?;
        let version: libloading::Symbol<CuVersion> =
            lib.get(b"cuDriverGetVersion").map_err(|e| e.to_string())?;
        let mut v = 0;
        version(&mut v);
        let driver = format!("CUDA {}.{} (libcuda.so.1)", v / 1000, (v % 1000) / 10);
        if init(0) != 0 {
            return Ok((driver, Vec::new()));
        }
        let mut n = 0;
        if count(&mut n) != 0 {
            return Ok((driver, Vec::new()));
        }
        let mut devices = Vec::new();
        for i in 0..n {
            let mut buf = [0 as c_char; 256];
            name(buf.as_mut_ptr(), 256, i);
            let mut total = 0usize;
            mem(&mut total, i);
            devices.push(CudaDevice {
                index: i as usize,
                name: std::ffi::CStr::from_ptr(buf.as_ptr())
                    .to_string_lossy()
                    .into_owned(),
                total_memory_bytes: total as u64,
            });
        }
        Ok((driver, devices))
    }
}
