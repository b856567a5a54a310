//! JUnit XML, the report format CI servers read: one [`Suite`] of [`Case`]s, each passed,
//! failed (one or more [`Outcome::Failure`]s) or skipped. The counts in the suite header are
//! derived from the cases, so they cannot disagree with them.

use std::fmt::Write;

/// One test suite.
#[derive(Debug, Clone, PartialEq)]
pub struct Suite {
    pub name: String,
    /// Seconds the suite took, written as `time="…"` with millisecond precision.
    pub time: Option<f64>,
    pub cases: Vec<Case>,
}

/// One test case; no outcomes means it passed.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub classname: String,
    pub name: String,
    /// Seconds the case took, written like [`Suite::time`].
    pub time: Option<f64>,
    pub outcomes: Vec<Outcome>,
}

/// Why a case did not pass.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// `<failure [type="kind"] message="…">text</failure>`.
    Failure {
        kind: Option<String>,
        message: String,
        text: String,
    },
    /// `<skipped message="…"/>`.
    Skipped { message: String },
}

/// The two shapes the tools write; both are read the same by CI servers, kept apart so the
/// reports stay byte for byte what they were.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// `<testsuites>` around the suite, a `skipped` count in its header, each test case on
    /// one line (what `modelzoo ci` writes).
    Wrapped,
    /// A bare `<testsuite>` with `errors="0"` in its header, a passed case as an empty
    /// element and each failure on its own line (what `modelzoo validate` writes).
    Bare,
}

impl Case {
    fn failed(&self) -> bool {
        self.outcomes
            .iter()
            .any(|o| matches!(o, Outcome::Failure { .. }))
    }

    fn skipped(&self) -> bool {
        !self.failed() && !self.outcomes.is_empty()
    }
}

impl Suite {
    /// The XML document, declaration included, ending in a newline.
    pub fn render(&self, layout: Layout) -> String {
        let tests = self.cases.len();
        let failures = self.cases.iter().filter(|c| c.failed()).count();
        let skipped = self.cases.iter().filter(|c| c.skipped()).count();
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        if layout == Layout::Wrapped {
            out.push_str("<testsuites>");
        }
        let _ = write!(
            out,
            "<testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\"",
            escape(&self.name)
        );
        match layout {
            Layout::Wrapped => {
                let _ = write!(out, " skipped=\"{skipped}\"");
            }
            Layout::Bare => out.push_str(" errors=\"0\""),
        }
        write_time(&mut out, self.time);
        out.push_str(">\n");
        for case in &self.cases {
            case.render(layout, &mut out);
        }
        out.push_str("</testsuite>");
        if layout == Layout::Wrapped {
            out.push_str("</testsuites>");
        }
        out.push('\n');
        out
    }
}

impl Case {
    fn render(&self, layout: Layout, out: &mut String) {
        let _ = write!(
            out,
            "  <testcase classname=\"{}\" name=\"{}\"",
            escape(&self.classname),
            escape(&self.name)
        );
        write_time(out, self.time);
        let (open, indent, close) = match layout {
            Layout::Wrapped => (">", "", "</testcase>\n"),
            Layout::Bare if self.outcomes.is_empty() => {
                out.push_str("/>\n");
                return;
            }
            Layout::Bare => (">\n", "    ", "  </testcase>\n"),
        };
        out.push_str(open);
        for outcome in &self.outcomes {
            out.push_str(indent);
            match outcome {
                Outcome::Failure {
                    kind,
                    message,
                    text,
                } => {
                    out.push_str("<failure");
                    if let Some(kind) = kind {
                        let _ = write!(out, " type=\"{}\"", escape(kind));
                    }
                    let _ = write!(
                        out,
                        " message=\"{}\">{}</failure>",
                        escape(message),
                        escape(text)
                    );
                }
                Outcome::Skipped { message } => {
                    let _ = write!(out, "<skipped message=\"{}\"/>", escape(message));
                }
            }
            if layout == Layout::Bare {
                out.push('\n');
            }
        }
        out.push_str(close);
    }
}

fn write_time(out: &mut String, time: Option<f64>) {
    if let Some(t) = time {
        let _ = write!(out, " time=\"{t:.3}\"");
    }
}

/// `s` as XML attribute or element text: markup escaped, and the control characters XML 1.0
/// cannot carry at all replaced by U+FFFD.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, outcomes: Vec<Outcome>) -> Case {
        Case {
            classname: "cls".into(),
            name: name.into(),
            time: None,
            outcomes,
        }
    }

    fn failure(kind: Option<&str>, message: &str) -> Outcome {
        Outcome::Failure {
            kind: kind.map(str::to_string),
            message: message.into(),
            text: format!("{message}\ndetail"),
        }
    }

    fn suite(time: Option<f64>) -> Suite {
        Suite {
            name: "s".into(),
            time,
            cases: vec![
                case("ok", vec![]),
                case("bad", vec![failure(Some("r.a"), "x"), failure(None, "y")]),
                case(
                    "skip",
                    vec![Outcome::Skipped {
                        message: "no device".into(),
                    }],
                ),
            ],
        }
    }

    #[test]
    fn escape_handles_markup_and_control_chars() {
        assert_eq!(
            escape("a<b>&\"'\u{1}\t\n"),
            "a&lt;b&gt;&amp;&quot;&apos;\u{FFFD}\t\n"
        );
    }

    #[test]
    fn wrapped_layout_counts_failed_and_skipped_cases() {
        let mut s = suite(Some(1.5));
        s.cases[0].time = Some(0.25);
        assert_eq!(
            s.render(Layout::Wrapped),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <testsuites><testsuite name=\"s\" tests=\"3\" failures=\"1\" skipped=\"1\" time=\"1.500\">\n  \
             <testcase classname=\"cls\" name=\"ok\" time=\"0.250\"></testcase>\n  \
             <testcase classname=\"cls\" name=\"bad\"><failure type=\"r.a\" message=\"x\">x\ndetail</failure><failure message=\"y\">y\ndetail</failure></testcase>\n  \
             <testcase classname=\"cls\" name=\"skip\"><skipped message=\"no device\"/></testcase>\n\
             </testsuite></testsuites>\n"
        );
    }

    #[test]
    fn bare_layout_puts_each_failure_on_a_line() {
        assert_eq!(
            suite(None).render(Layout::Bare),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <testsuite name=\"s\" tests=\"3\" failures=\"1\" errors=\"0\">\n  \
             <testcase classname=\"cls\" name=\"ok\"/>\n  \
             <testcase classname=\"cls\" name=\"bad\">\n    \
             <failure type=\"r.a\" message=\"x\">x\ndetail</failure>\n    \
             <failure message=\"y\">y\ndetail</failure>\n  \
             </testcase>\n  \
             <testcase classname=\"cls\" name=\"skip\">\n    \
             <skipped message=\"no device\"/>\n  \
             </testcase>\n\
             </testsuite>\n"
        );
    }

    #[test]
    fn attributes_and_text_are_escaped() {
        let s = Suite {
            name: "a&b".into(),
            time: None,
            cases: vec![case("<x>", vec![failure(Some("\"k\""), "m'")])],
        };
        let xml = s.render(Layout::Bare);
        assert!(xml.contains("name=\"a&amp;b\""), "{xml}");
        assert!(xml.contains("name=\"&lt;x&gt;\""), "{xml}");
        assert!(
            xml.contains(
                "<failure type=\"&quot;k&quot;\" message=\"m&apos;\">m&apos;\ndetail</failure>"
            ),
            "{xml}"
        );
    }
}
