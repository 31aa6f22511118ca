//! The client's frame readers, without I/O: lines of the stdio transport and events of an SSE stream, each bounded
//! by the frame limit. A line (or an event) longer than the limit is reported once, with its first bytes, and the
//! rest of it is skipped as it arrives, never held. Every byte is looked at once: a chunk is scanned, not the whole
//! buffer again.

use std::time::Duration;

/// How many bytes of an over-long frame are kept to report it (and to find the request id of an answer in it).
pub(crate) const HEAD: usize = 256;

/// What the line splitter hands out.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Piece<'a> {
    /// A complete line, without its `\n` (nor a `\r` before it).
    Line(&'a [u8]),
    /// A line went past the limit: its first bytes. The rest of it, up to its newline, is skipped.
    TooLong(&'a [u8]),
}

/// Splits a byte stream into lines of at most `limit` bytes.
#[derive(Debug)]
pub(crate) struct Lines {
    partial: Vec<u8>,
    limit: usize,
    /// Inside a line over the limit: drop bytes up to its newline.
    skipping: bool,
}

impl Lines {
    pub(crate) fn new(limit: usize) -> Lines {
        Lines { partial: Vec::new(), limit, skipping: false }
    }

    /// Splits `chunk`, handing each complete line (or over-long line's head) to `f`.
    pub(crate) fn feed(&mut self, mut chunk: &[u8], f: &mut dyn FnMut(Piece<'_>)) {
        while !chunk.is_empty() {
            let newline = chunk.iter().position(|b| *b == b'\n');
            let (part, rest, ended) = match newline {
                Some(at) => (&chunk[..at], &chunk[at + 1..], true),
                None => (chunk, &chunk[chunk.len()..], false),
            };
            chunk = rest;
            if self.skipping {
                self.skipping = !ended;
                continue;
            }
            if self.partial.len() + part.len() > self.limit {
                let mut head = std::mem::take(&mut self.partial);
                head.extend_from_slice(&part[..part.len().min(HEAD.saturating_sub(head.len()))]);
                head.truncate(HEAD);
                f(Piece::TooLong(&head));
                self.skipping = !ended;
                continue;
            }
            if !ended {
                self.partial.extend_from_slice(part);
                continue;
            }
            if self.partial.is_empty() {
                f(Piece::Line(strip_cr(part)));
            } else {
                self.partial.extend_from_slice(part);
                let line = std::mem::take(&mut self.partial);
                f(Piece::Line(strip_cr(&line)));
                // Keep a modest buffer for the next line, not one as large as the largest line seen.
                if line.capacity() <= 64 * 1024 {
                    self.partial = line;
                    self.partial.clear();
                }
            }
        }
    }

    /// How many bytes of an unfinished line are held.
    #[cfg_attr(not(any(test, feature = "fuzzing")), allow(dead_code))]
    pub(crate) fn held(&self) -> usize {
        self.partial.len()
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// One server-sent event.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) id: Option<String>,
    pub(crate) retry: Option<Duration>,
    pub(crate) data: String,
}

/// What the SSE parser hands out.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum SseItem {
    /// A complete event (a blank line ended it).
    Event(Event),
    /// An event went past the limit: its first bytes. It is skipped up to the blank line that ends it.
    TooLarge(Vec<u8>),
}

/// Parses an SSE stream into events whose `data` is at most `limit` bytes.
#[derive(Debug)]
pub(crate) struct Sse {
    lines: Lines,
    state: SseState,
}

#[derive(Debug)]
struct SseState {
    limit: usize,
    event: Event,
    /// How many `data` lines the event has (they join with "\n"; an empty one still counts).
    data_lines: usize,
    /// Whether the event has a field yet (a blank line after none dispatches nothing).
    started: bool,
    /// Inside an event over the limit: drop lines up to the blank one.
    skipping: bool,
}

impl SseState {
    fn reset(&mut self) {
        self.event = Event::default();
        self.data_lines = 0;
        self.started = false;
    }

    fn line(&mut self, piece: Piece<'_>, f: &mut dyn FnMut(SseItem)) {
        let line = match piece {
            Piece::TooLong(head) => {
                if !self.skipping {
                    f(SseItem::TooLarge(head.to_vec()));
                }
                self.skipping = true;
                return self.reset();
            }
            Piece::Line(line) => line,
        };
        if line.is_empty() {
            if self.skipping {
                self.skipping = false;
            } else if self.started {
                let event = std::mem::take(&mut self.event);
                self.reset();
                f(SseItem::Event(event));
            }
            return;
        }
        if self.skipping {
            return;
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (&*line, ""),
        };
        match field {
            "" => return, // a comment
            "data" => {
                let joint = usize::from(self.data_lines > 0);
                if self.event.data.len() + joint + value.len() > self.limit {
                    let mut head = std::mem::take(&mut self.event.data).into_bytes();
                    head.extend_from_slice(&value.as_bytes()[..value.len().min(HEAD)]);
                    head.truncate(HEAD);
                    f(SseItem::TooLarge(head));
                    self.skipping = true;
                    return self.reset();
                }
                if joint == 1 {
                    self.event.data.push('\n');
                }
                self.event.data.push_str(value);
                self.data_lines += 1;
            }
            "id" => self.event.id = Some(value.to_owned()),
            // A retry that is not a number of milliseconds is ignored, as the SSE specification says.
            "retry" => {
                if let Ok(ms) = value.parse() {
                    self.event.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
        self.started = true;
    }
}

impl Sse {
    pub(crate) fn new(limit: usize) -> Sse {
        // A line holds a field name besides the data: room for it, so a datum at the limit still fits.
        Sse {
            lines: Lines::new(limit.saturating_add(HEAD)),
            state: SseState { limit, event: Event::default(), data_lines: 0, started: false, skipping: false },
        }
    }

    /// Parses `chunk`, handing each complete event (or an over-large event's head) to `f`.
    pub(crate) fn feed(&mut self, chunk: &[u8], f: &mut dyn FnMut(SseItem)) {
        let state = &mut self.state;
        self.lines.feed(chunk, &mut |piece| state.line(piece, f));
    }

    /// How many bytes are held: an unfinished line and the event's data so far (both within the limit).
    #[cfg_attr(not(any(test, feature = "fuzzing")), allow(dead_code))]
    pub(crate) fn held(&self) -> usize {
        self.lines.held() + self.state.event.data.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(limit: usize, chunks: &[&[u8]]) -> Vec<String> {
        let mut lines = Lines::new(limit);
        let mut out = Vec::new();
        for chunk in chunks {
            lines.feed(chunk, &mut |p| {
                out.push(match p {
                    Piece::Line(l) => String::from_utf8_lossy(l).into_owned(),
                    Piece::TooLong(h) => format!("TOO LONG {}", String::from_utf8_lossy(h)),
                })
            });
        }
        out
    }

    #[test]
    fn lines_split_across_chunks_and_long_ones_are_skipped() {
        assert_eq!(lines(8, &[b"ab", b"c\r\nde\n\n"]), ["abc", "de", ""]);
        assert_eq!(lines(4, &[b"abcdefgh", b"ij\nok\n"]), ["TOO LONG abcdefgh", "ok"]);
        assert_eq!(lines(4, &[b"abc", b"de", b"fg", b"\nok\n"]), ["TOO LONG abcde", "ok"]);
        assert_eq!(lines(4, &[b"abcd\n"]), ["abcd"]);
        let mut long = Lines::new(4);
        for _ in 0..1000 {
            long.feed(b"xxxxxxxx", &mut |_| {});
        }
        assert_eq!(long.held(), 0, "a skipped line is not held");
    }

    fn events(limit: usize, chunks: &[&[u8]]) -> Vec<SseItem> {
        let mut sse = Sse::new(limit);
        let mut out = Vec::new();
        for chunk in chunks {
            sse.feed(chunk, &mut |e| out.push(e));
        }
        out
    }

    #[test]
    fn events_join_data_lines_and_large_ones_are_skipped() {
        let got = events(64, &[b"id: 7\nretry: 50\ndata: a\n", b"data:\nretry: soon\ndata: b\n\n: comment\n\n"]);
        assert_eq!(
            got,
            [SseItem::Event(Event {
                id: Some("7".into()),
                retry: Some(Duration::from_millis(50)),
                data: "a\n\nb".into()
            })]
        );
        let got = events(8, &[b"data: 12345\ndata: 6789\ndata: more\n\ndata: ok\n\n"]);
        assert_eq!(
            got,
            [SseItem::TooLarge(b"123456789".to_vec()), SseItem::Event(Event { data: "ok".into(), ..Event::default() })]
        );
        let mut sse = Sse::new(16);
        let mut seen = 0;
        for _ in 0..10_000 {
            sse.feed(b"data: 12345678\n", &mut |_| seen += 1);
        }
        assert_eq!(seen, 1, "one report for the event that went over");
        assert!(sse.held() <= 16);
    }
}
