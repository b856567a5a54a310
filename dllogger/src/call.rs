//! What one logger call carries to the backends: its [`Step`], its [`Value`]s and its
//! [`Verbosity`].

/// How much a backend writes, as in tcap_dllogger (`OFF=-1`, `DEFAULT=0`, `VERBOSE=1`).
///
/// A backend writes a `log` call when the call's verbosity is at most the backend's. An `Off`
/// backend writes nothing at all (tcap would still write metadata to it), and a `log` call at
/// `Off` is never written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verbosity {
    Off,
    Default,
    Verbose,
}

impl Verbosity {
    /// The integer tcap_dllogger uses for this level.
    pub fn as_tcap(self) -> i32 {
        match self {
            Verbosity::Off => -1,
            Verbosity::Default => 0,
            Verbosity::Verbose => 1,
        }
    }
}

/// Where in training a `log` call happened: tcap's `(epoch)`, `(epoch, iteration)`,
/// `(epoch, iteration, validation iteration)` tuples, or a free string such as `"PARAMETER"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Epoch(u64),
    EpochIter(u64, u64),
    EpochIterVal(u64, u64, u64),
    Text(String),
}

impl From<u64> for Step {
    fn from(e: u64) -> Self {
        Step::Epoch(e)
    }
}
impl From<(u64, u64)> for Step {
    fn from((e, i): (u64, u64)) -> Self {
        Step::EpochIter(e, i)
    }
}
impl From<(u64, u64, u64)> for Step {
    fn from((e, i, v): (u64, u64, u64)) -> Self {
        Step::EpochIterVal(e, i, v)
    }
}
impl From<&str> for Step {
    fn from(s: &str) -> Self {
        Step::Text(s.to_owned())
    }
}
impl From<String> for Step {
    fn from(s: String) -> Self {
        Step::Text(s)
    }
}

/// One logged value. Floats keep full precision (Python `str(float)` shape on stdout).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Float(f64),
    Int(i64),
    Str(String),
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}
impl From<f32> for Value {
    /// Widened exactly as Python's `float(tensor.item())` is, so `0.5533216595649719` stays.
    fn from(v: f32) -> Self {
        Value::Float(v as f64)
    }
}
impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(v as i64)
    }
}
impl From<u32> for Value {
    fn from(v: u32) -> Self {
        Value::Int(v as i64)
    }
}
impl From<u64> for Value {
    /// Values above `i64::MAX` become floats rather than wrapping.
    fn from(v: u64) -> Self {
        i64::try_from(v).map_or(Value::Float(v as f64), Value::Int)
    }
}
impl From<usize> for Value {
    fn from(v: usize) -> Self {
        Value::from(v as u64)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Str(v.to_owned())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Str(v)
    }
}
