//! Timestamps of logger calls, formatted the way tcap_dllogger prints them.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The moment of one logger call, computed once and shared by every backend.
#[derive(Debug, Clone)]
pub struct Timestamp {
    unix_secs: u64,
    micros: u32,
    elapsed_micros: u64,
    datetime: [u8; 26],
    datetime_len: usize,
    instant: Instant,
}

impl Timestamp {
    /// Local time as Python's `str(datetime.now())`: `2025-05-15 14:20:10.934968`
    /// (no fraction when the microsecond is 0, as Python prints it).
    pub fn datetime(&self) -> &str {
        std::str::from_utf8(&self.datetime[..self.datetime_len]).unwrap_or("")
    }
    /// Seconds since the Unix epoch, microsecond resolution (Python `datetime.timestamp()`).
    pub fn unix_seconds(&self) -> f64 {
        self.unix_secs as f64 + self.micros as f64 / 1e6
    }
    /// Seconds since the logger was created (Python `timedelta.total_seconds()`).
    pub fn elapsed_seconds(&self) -> f64 {
        self.elapsed_micros as f64 / 1e6
    }
    /// Monotonic instant of the call, for backends that flush on a timer.
    pub fn instant(&self) -> Instant {
        self.instant
    }
}

/// Makes [`Timestamp`]s; the local-time formatting of the seconds is cached so that a log call
/// costs no time-zone lookup unless the second changed.
pub(crate) struct Clock {
    start: Instant,
    cached_sec: u64,
    cached: [u8; 19],
}

impl Clock {
    pub(crate) fn new() -> Self {
        Clock {
            start: Instant::now(),
            cached_sec: u64::MAX,
            cached: [b'0'; 19],
        }
    }

    pub(crate) fn now(&mut self) -> Timestamp {
        let instant = Instant::now();
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        let (secs, micros) = (since.as_secs(), since.subsec_micros());
        if secs != self.cached_sec {
            use chrono::TimeZone;
            let text = i64::try_from(secs)
                .ok()
                .and_then(|s| chrono::Local.timestamp_opt(s, 0).single())
                .map(|t| t.format("%Y-%m-%d %H:%M:%S").to_string())
                .unwrap_or_else(|| "1970-01-01 00:00:00".to_owned());
            let n = text.len().min(19);
            self.cached[..n].copy_from_slice(&text.as_bytes()[..n]);
            self.cached_sec = secs;
        }
        let mut datetime = [0u8; 26];
        datetime[..19].copy_from_slice(&self.cached);
        let mut datetime_len = 19;
        if micros != 0 {
            datetime[19] = b'.';
            let mut m = micros;
            for i in (20..26).rev() {
                datetime[i] = b'0' + (m % 10) as u8;
                m /= 10;
            }
            datetime_len = 26;
        }
        Timestamp {
            unix_secs: secs,
            micros,
            elapsed_micros: instant.duration_since(self.start).as_micros() as u64,
            datetime,
            datetime_len,
            instant,
        }
    }
}
