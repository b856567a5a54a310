//! Memory stays independent of input size: 1 GiB streamed through the reader (generated on
//! the fly, never on disk), including a 128 MiB line of tqdm progress redrawn with `\r` before
//! a record and a 256 MiB line without a newline. Alone in its file so
//! the process's peak RSS belongs to this test.

use std::io::{BufReader, Read};

/// Repeats `pattern` for `total` bytes.
struct Repeat {
    pattern: Vec<u8>,
    pos: usize,
    left: u64,
}

impl Read for Repeat {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut n = 0;
        while n < buf.len() && self.left > 0 {
            let take = (self.pattern.len() - self.pos)
                .min(buf.len() - n)
                .min(self.left as usize);
            buf[n..n + take].copy_from_slice(&self.pattern[self.pos..self.pos + take]);
            self.pos = (self.pos + take) % self.pattern.len();
            self.left -= take as u64;
            n += take;
        }
        Ok(n)
    }
}

fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let l = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    l.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn gigabyte_stream_in_bounded_memory() {
    let before = peak_rss_kib();
    let lines = b"TCAPPDLL 2025-05-15 14:20:10.930385 - Epoch: 0 Iteration: 0  rank : 0  train.loss : 0.5300281643867493  train.ips : 10415.778984944902 imgs/sTCAPPDLL 2025-05-15 14:20:10.930387 - Epoch: 0 Iteration: 0  rank : 3  train.loss : 0.6068281531333923  train.ips : 10400.443858969391 imgs/s\nW0515 14:20:08.430000 140114268497728 torch/distributed/run.py:779] ****\n".to_vec();
    let per = lines.len() as u64;
    let n_lines = (640u64 << 20) / per;
    let progress =
        b"\r 42%|####################          | 4200/10000 [01:02<01:26, 67.3it/s]".to_vec();
    let tqdm = Repeat {
        left: (128u64 << 20) / progress.len() as u64 * progress.len() as u64,
        pattern: progress,
        pos: 0,
    };
    let tqdm_len = tqdm.left;
    let after_bar: &[u8] =
        b"\rTCAPPDLL 2025-05-15 14:20:11.0 - Epoch: 1 Iteration: 0  rank : 0  train.loss : 0.25\n";
    let long = Repeat {
        pattern: b"no newline here ".to_vec(),
        pos: 0,
        left: 256 << 20,
    };
    let head = Repeat {
        pattern: lines,
        pos: 0,
        left: n_lines * per,
    };
    let input = head.chain(tqdm).chain(after_bar).chain(long);
    let mut r = dllogger::LogReader::new(BufReader::with_capacity(64 * 1024, input));
    let mut n = 0u64;
    for rec in r.by_ref() {
        assert!(rec.get("train.loss").is_some());
        n += 1;
    }
    let s = r.stats().clone();
    assert_eq!(
        n,
        n_lines * 2 + 1,
        "the record after the progress bar is read"
    );
    assert_eq!(s.lines, n_lines * 2 + 2);
    assert_eq!(
        s.malformed, 1,
        "the 256 MiB line is malformed, not buffered"
    );
    assert_eq!((s.overlong, s.overlong_unread), (2, 1));
    assert_eq!(
        s.bytes,
        n_lines * per + tqdm_len + after_bar.len() as u64 + (256 << 20)
    );
    if let (Some(b), Some(a)) = (before, peak_rss_kib()) {
        assert!(
            a.saturating_sub(b) < 32 * 1024,
            "peak RSS grew by {} KiB",
            a - b
        );
    } else {
        eprintln!("no /proc/self/status: RSS not checked");
    }
}
