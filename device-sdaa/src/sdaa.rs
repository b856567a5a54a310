//! The SDAA backend: find and load the SDAA libraries and the vendor's torch plugin.
//!
//! Search order for every library: `$SDAA_HOME/lib64`, `$TECO_HOME/lib64`, `/opt/tecoai/lib64`,
//! then the system library path (`dlopen` of the bare file name: LD_LIBRARY_PATH, ld.so.cache,
//! the default directories — never the current directory). Nothing is loaded from a relative
//! path unless the user named it (a relative `SDAA_HOME` is resolved against the current
//! directory, because the user set it).

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
use serde::Serialize;

use crate::bindings as b;
use crate::{shim, DeviceError, OpenOptions};

/// Required SDAA libraries (file names).
pub const REQUIRED_LIBRARIES: [&str; 4] = [
    "libsdaart.so",
    "libtecodnn.so",
    "libtecoblas.so",
    "libtccl.so",
];
/// Optional SDAA libraries, reported when present.
pub const OPTIONAL_LIBRARIES: [&str; 3] = ["libsdpti.so", "libtecodnn_ext.so", "libtecorand.so"];
/// File name of the torch plugin inside an SDK's lib64 (and the emulator's).
pub const PLUGIN_FILE: &str = "libtorch_sdaa.so";

/// The directories searched, in order, from the environment (existing or not).
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for var in ["SDAA_HOME", "TECO_HOME"] {
        if let Some(home) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            dirs.push(absolute(&PathBuf::from(home).join("lib64")));
        }
    }
    dirs.push(PathBuf::from("/opt/tecoai/lib64"));
    dirs
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Where a library was found and loaded from.
#[derive(Debug, Clone, Serialize)]
pub struct LoadedLibrary {
    pub file: String,
    pub path: PathBuf,
}

/// One library loaded and kept for the process lifetime (never unloaded: the plugin's
/// registrations and the runtime's state must outlive every tensor).
struct Lib {
    path: PathBuf,
    lib: &'static Library,
}

impl Lib {
    fn sym<T: Copy>(&self, name: &str) -> Result<T, DeviceError> {
        // SAFETY: the type T is the declaration from `bindings` for this symbol name.
        unsafe { self.lib.get::<T>(name.as_bytes()) }
            .map(|s| *s)
            .map_err(|e| DeviceError::SymbolMissing {
                symbol: name.to_string(),
                file: self.path.clone(),
                reason: e.to_string(),
            })
    }

    fn opt_sym<T: Copy>(&self, name: &str) -> Option<T> {
        self.sym(name).ok()
    }

    /// The library's version string symbol, else its numeric version, else None.
    fn version_string(&self, string_symbol: &str) -> Option<String> {
        let f: b::GetVersionString = self.opt_sym(string_symbol)?;
        cstr(unsafe { f() })
    }
}

fn cstr(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }
}

/// Result of looking for one library.
enum Found {
    Loaded(Lib),
    /// A file exists but dlopen failed.
    Broken(PathBuf, String),
    Absent,
}

fn open_global(path: &Path) -> Result<&'static Library, String> {
    // SAFETY: loading a vendor library by explicit path; its initializers run here.
    unsafe { Library::open(Some(path), RTLD_NOW | RTLD_GLOBAL) }
        .map(|l| &*Box::leak(Box::new(l)))
        .map_err(|e| e.to_string())
}

/// The absolute path a bare-name dlopen resolved to, from /proc/self/maps.
fn mapped_path(file: &str) -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let suffix = format!("/{file}");
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.ends_with(&suffix))
        .map(PathBuf::from)
}

fn find(file: &str, dirs: &[PathBuf]) -> Found {
    for dir in dirs {
        let path = dir.join(file);
        if path.exists() {
            return match open_global(&path) {
                Ok(lib) => Found::Loaded(Lib { path, lib }),
                Err(e) => Found::Broken(path, e),
            };
        }
    }
    // The system search path: a bare file name (contains no '/', so dlopen never treats it
    // as a path relative to the current directory).
    match open_global(Path::new(file)) {
        Ok(lib) => {
            let path = mapped_path(file).unwrap_or_else(|| PathBuf::from(file));
            Found::Loaded(Lib { path, lib })
        }
        Err(_) => Found::Absent,
    }
}

/// Function table of the SDAA runtime and TCCL.
#[derive(Clone, Copy)]
pub(crate) struct Api {
    pub get_device_count: b::sdaaGetDeviceCount,
    pub set_device: b::sdaaSetDevice,
    pub device_synchronize: b::sdaaDeviceSynchronize,
    pub mem_get_info: b::sdaaMemGetInfo,
    pub driver_get_version: b::sdaaDriverGetVersion,
    pub runtime_get_version: b::sdaaRuntimeGetVersion,
    pub get_device_properties: b::sdaaGetDeviceProperties,
    pub get_error_string: b::sdaaGetErrorString,
    pub tecodnn_get_version: b::tecodnnGetVersion,
    pub tecoblas_get_version: b::tecoblasGetVersion,
    pub tccl: TcclApi,
}

/// TCCL's NCCL-like entry points.
#[derive(Clone, Copy)]
pub struct TcclApi {
    pub get_version: b::tcclGetVersion,
    pub get_unique_id: b::tcclGetUniqueId,
    pub comm_init_rank: b::tcclCommInitRank,
    pub all_reduce: b::tcclAllReduce,
    pub broadcast: b::tcclBroadcast,
    pub comm_destroy: b::tcclCommDestroy,
    pub get_error_string: b::tcclGetErrorString,
}

/// The loaded SDAA software stack (libraries, no plugin yet).
pub struct SdaaLibraries {
    libs: BTreeMap<&'static str, Lib>,
    pub(crate) api: Api,
}

impl SdaaLibraries {
    /// Load every required library (and the optional ones that exist) and resolve symbols.
    pub fn load() -> Result<SdaaLibraries, DeviceError> {
        SdaaLibraries::load_from(&search_dirs())
    }

    /// [`SdaaLibraries::load`] searching `dirs` (then the system library path).
    pub fn load_from(dirs: &[PathBuf]) -> Result<SdaaLibraries, DeviceError> {
        let dirs = dirs.to_vec();
        let mut libs = BTreeMap::new();
        let mut missing = Vec::new();
        for file in REQUIRED_LIBRARIES {
            match find(file, &dirs) {
                Found::Loaded(lib) => {
                    libs.insert(file, lib);
                }
                Found::Broken(path, reason) => {
                    return Err(DeviceError::LibraryLoad { path, reason })
                }
                Found::Absent => missing.push(file.to_string()),
            }
        }
        if !missing.is_empty() {
            return Err(DeviceError::SdaaLibrariesMissing {
                missing,
                searched: dirs,
            });
        }
        for file in OPTIONAL_LIBRARIES {
            match find(file, &dirs) {
                Found::Loaded(lib) => {
                    libs.insert(file, lib);
                }
                Found::Broken(path, reason) => {
                    tracing::warn!(path = %path.display(), %reason, "optional SDAA library failed to load")
                }
                Found::Absent => {}
            }
        }
        let rt = &libs["libsdaart.so"];
        let tccl = &libs["libtccl.so"];
        let api = Api {
            get_device_count: rt.sym("sdaaGetDeviceCount")?,
            set_device: rt.sym("sdaaSetDevice")?,
            device_synchronize: rt.sym("sdaaDeviceSynchronize")?,
            mem_get_info: rt.sym("sdaaMemGetInfo")?,
            driver_get_version: rt.sym("sdaaDriverGetVersion")?,
            runtime_get_version: rt.sym("sdaaRuntimeGetVersion")?,
            get_device_properties: rt.sym("sdaaGetDeviceProperties")?,
            get_error_string: rt.sym("sdaaGetErrorString")?,
            tecodnn_get_version: libs["libtecodnn.so"].sym("tecodnnGetVersion")?,
            tecoblas_get_version: libs["libtecoblas.so"].sym("tecoblasGetVersion")?,
            tccl: TcclApi {
                get_version: tccl.sym("tcclGetVersion")?,
                get_unique_id: tccl.sym("tcclGetUniqueId")?,
                comm_init_rank: tccl.sym("tcclCommInitRank")?,
                all_reduce: tccl.sym("tcclAllReduce")?,
                broadcast: tccl.sym("tcclBroadcast")?,
                comm_destroy: tccl.sym("tcclCommDestroy")?,
                get_error_string: tccl.sym("tcclGetErrorString")?,
            },
        };
        Ok(SdaaLibraries { libs, api })
    }

    /// Files loaded, in a stable order.
    pub fn loaded(&self) -> Vec<LoadedLibrary> {
        self.libs
            .iter()
            .map(|(file, lib)| LoadedLibrary {
                file: file.to_string(),
                path: lib.path.clone(),
            })
            .collect()
    }

    /// TCCL's entry points, for a `tccl` process group.
    pub fn tccl(&self) -> TcclApi {
        self.api.tccl
    }

    pub(crate) fn path_of(&self, file: &str) -> Option<&Path> {
        self.libs.get(file).map(|l| l.path.as_path())
    }

    fn check(&self, call: &'static str, code: c_int) -> Result<(), DeviceError> {
        if code == 0 {
            return Ok(());
        }
        let message = cstr(unsafe { (self.api.get_error_string)(code) })
            .unwrap_or_else(|| "unknown error".to_string());
        Err(DeviceError::SdaaCall {
            call,
            code,
            message,
        })
    }

    pub fn device_count(&self) -> Result<usize, DeviceError> {
        let mut n: c_int = 0;
        self.check("sdaaGetDeviceCount", unsafe {
            (self.api.get_device_count)(&mut n)
        })?;
        Ok(n.max(0) as usize)
    }

    pub fn set_device(&self, ordinal: usize) -> Result<(), DeviceError> {
        self.check("sdaaSetDevice", unsafe {
            (self.api.set_device)(ordinal as c_int)
        })
    }

    pub fn synchronize(&self, ordinal: usize) -> Result<(), DeviceError> {
        self.set_device(ordinal)?;
        self.check("sdaaDeviceSynchronize", unsafe {
            (self.api.device_synchronize)()
        })
    }

    /// (free, total) bytes of one device.
    pub fn mem_info(&self, ordinal: usize) -> Result<(u64, u64), DeviceError> {
        self.set_device(ordinal)?;
        let (mut free, mut total) = (0usize, 0usize);
        self.check("sdaaMemGetInfo", unsafe {
            (self.api.mem_get_info)(&mut free, &mut total)
        })?;
        Ok((free as u64, total as u64))
    }

    pub fn device_name(&self, ordinal: usize) -> Result<String, DeviceError> {
        let mut buf = vec![0u8; b::DEVICE_PROP_BUFFER];
        self.check("sdaaGetDeviceProperties", unsafe {
            (self.api.get_device_properties)(buf.as_mut_ptr().cast(), ordinal as c_int)
        })?;
        let name = &buf[..256];
        let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
        Ok(String::from_utf8_lossy(&name[..end]).into_owned())
    }

    /// Version text of one library file, as the report shows it.
    pub fn version_of(&self, file: &str) -> Option<String> {
        let lib = self.libs.get(file)?;
        let numeric = |v: i64| Some(v.to_string());
        match file {
            "libsdaart.so" => lib
                .version_string("sdaaRuntimeGetVersionString")
                .or_else(|| {
                    let mut v = 0;
                    (unsafe { (self.api.runtime_get_version)(&mut v) } == 0).then(|| v.to_string())
                }),
            "libtecodnn.so" => lib
                .version_string("tecodnnGetVersionString")
                .or_else(|| numeric(unsafe { (self.api.tecodnn_get_version)() } as i64)),
            "libtecoblas.so" => lib
                .version_string("tecoblasGetVersionString")
                .or_else(|| numeric(unsafe { (self.api.tecoblas_get_version)() } as i64)),
            "libtccl.so" => lib.version_string("tcclGetVersionString").or_else(|| {
                let mut v = 0;
                (unsafe { (self.api.tccl.get_version)(&mut v) } == 0).then(|| v.to_string())
            }),
            "libsdpti.so" => lib.version_string("sdptiGetVersionString").or_else(|| {
                let f: b::sdptiGetVersion = lib.opt_sym("sdptiGetVersion")?;
                let mut v = 0u32;
                (unsafe { f(&mut v) } == 0).then(|| v.to_string())
            }),
            "libtecodnn_ext.so" => lib
                .version_string("tecodnnExtGetVersionString")
                .or_else(|| {
                    let f: b::tecodnnExtGetVersion = lib.opt_sym("tecodnnExtGetVersion")?;
                    numeric(unsafe { f() } as i64)
                }),
            "libtecorand.so" => lib.version_string("tecorandGetVersionString").or_else(|| {
                let f: b::tecorandGetVersion = lib.opt_sym("tecorandGetVersion")?;
                let mut v = 0;
                (unsafe { f(&mut v) } == 0).then(|| v.to_string())
            }),
            _ => None,
        }
    }

    /// The driver's version (the driver is a kernel module: no library path).
    pub fn driver_version(&self) -> Option<String> {
        let rt = self.libs.get("libsdaart.so")?;
        rt.version_string("sdaaDriverGetVersionString").or_else(|| {
            let mut v = 0;
            (unsafe { (self.api.driver_get_version)(&mut v) } == 0).then(|| v.to_string())
        })
    }
}

/// The torch plugin, once loaded and registered.
#[derive(Debug, Clone, Serialize)]
pub struct PluginInfo {
    pub path: PathBuf,
    pub version: Option<String>,
}

/// Candidate plugin paths in search order, and whether the first came from the user.
pub fn plugin_candidates(opts: &OpenOptions) -> (Vec<PathBuf>, bool) {
    plugin_candidates_from(opts, &search_dirs())
}

/// [`plugin_candidates`] with the SDK directories given.
pub fn plugin_candidates_from(opts: &OpenOptions, dirs: &[PathBuf]) -> (Vec<PathBuf>, bool) {
    if let Some(p) = &opts.sdaa_plugin {
        return (vec![absolute(p)], true);
    }
    if let Some(p) = std::env::var_os("SDAA_TORCH_PLUGIN").filter(|v| !v.is_empty()) {
        return (vec![absolute(Path::new(&p))], true);
    }
    let mut c: Vec<PathBuf> = dirs.iter().map(|d| d.join(PLUGIN_FILE)).collect();
    // An installed torch_sdaa Python package next to the torch whose libtorch is in use.
    if let Some(torch_lib) = crate::cuda::libtorch_lib_dir() {
        c.push(torch_lib.join("../../torch_sdaa/lib").join(PLUGIN_FILE));
    }
    (c, false)
}

/// Load the first existing candidate with RTLD_GLOBAL and check that it registered the
/// PrivateUse1 backend `sdaa` with a device guard. `explicit`: the single candidate came from
/// the user, so its absence is reported as such.
pub fn load_plugin_from(candidates: &[PathBuf], explicit: bool) -> Result<PluginInfo, DeviceError> {
    let candidates = candidates.to_vec();
    if candidates.is_empty() {
        return Err(DeviceError::PluginMissing {
            searched: candidates,
        });
    }
    let path = match candidates.iter().find(|p| p.exists()) {
        Some(p) => p.clone(),
        None if explicit => {
            return Err(DeviceError::PluginRegistration {
                path: candidates[0].clone(),
                reason: "no such file (given by --sdaa_plugin or SDAA_TORCH_PLUGIN)".to_string(),
            })
        }
        None => {
            return Err(DeviceError::PluginMissing {
                searched: candidates,
            })
        }
    };
    let lib = open_global(&path).map_err(|reason| DeviceError::PluginRegistration {
        path: path.clone(),
        reason: format!("failed to load: {reason}"),
    })?;
    let name = shim::privateuse1_name()?;
    if name != "sdaa" {
        return Err(DeviceError::PluginRegistration {
            path,
            reason: format!(
                "loaded, but it did not register a PrivateUse1 backend named \"sdaa\" (PrivateUse1 is named {name:?}); is this the Tecorigin torch plugin?"
            ),
        });
    }
    if shim::guard_device_count(shim::DEVICE_TYPE_PRIVATEUSE1)?.is_none() {
        return Err(DeviceError::PluginRegistration {
            path,
            reason: "loaded and named the backend \"sdaa\", but registered no device guard"
                .to_string(),
        });
    }
    let version = (unsafe { lib.get::<b::torch_sdaa_version>(b"torch_sdaa_version") })
        .ok()
        .and_then(|f| cstr(unsafe { f() }));
    Ok(PluginInfo { path, version })
}

/// Libraries + plugin: everything `--device sdaa` needs.
pub struct Sdaa {
    pub libraries: SdaaLibraries,
    pub plugin: PluginInfo,
}

static SDAA: Mutex<Option<Arc<Sdaa>>> = Mutex::new(None);

/// Load (once per process; later calls reuse the first success) libraries and plugin.
pub fn load(opts: &OpenOptions) -> Result<Arc<Sdaa>, DeviceError> {
    let mut slot = SDAA.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(s) = slot.as_ref() {
        return Ok(s.clone());
    }
    let dirs = search_dirs();
    let libraries = SdaaLibraries::load_from(&dirs)?;
    let (candidates, explicit) = plugin_candidates_from(opts, &dirs);
    let plugin = load_plugin_from(&candidates, explicit)?;
    let s = Arc::new(Sdaa { libraries, plugin });
    *slot = Some(s.clone());
    Ok(s)
}

/// The already loaded stack, if any, without loading anything.
pub(crate) fn loaded() -> Option<Arc<Sdaa>> {
    SDAA.lock().unwrap_or_else(|p| p.into_inner()).clone()
}
