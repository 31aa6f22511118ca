//! The client's frame readers (`mcp-runtime/src/client/frame.rs`): the stdio line splitter and the SSE parser, fed
//! a server's bytes in chunks, and the request id read off the head of an over-long answer. The input's first
//! byte picks the frame limit (1 to 64 bytes, or 4 KiB), its second how the rest is cut into chunks.
//!
//! - Lines: the same lines come out however the bytes are cut, and they are the model's (split on `\n`, one `\r`
//!   before it dropped; a line longer than the limit reported once by a head that is a prefix of it, of at least
//!   `min(256, limit + 1)` and at most 256 bytes, as soon as it is over, newline or not); an unfinished line is
//!   never handed out; no more than the limit is ever held.
//! - SSE: the same events come out however the bytes are cut, and they are those of a model that reads whole
//!   lines as the SSE specification does, with an event's data bounded by the limit (over it, one `TooLarge` and
//!   the event skipped to its blank line); what is held stays within the limit and one line.
//! - An id read off a head is one the head spells after `"id":`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp::__fuzz::{client_answered_id, client_lines, client_sse, ClientLine, ClientSse};
use mcp::RequestId;

/// How many bytes of an over-long frame are reported (the runtime's `frame::HEAD`).
const HEAD: usize = 256;

/// `data` cut into chunks whose lengths follow a small generator seeded with `seed` (seed 0: one chunk).
fn cut(data: &[u8], seed: u8) -> Vec<&[u8]> {
    if seed == 0 {
        return vec![data];
    }
    let mut chunks = Vec::new();
    let mut state = u32::from(seed);
    let mut rest = data;
    while !rest.is_empty() {
        state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let n = 1 + (state >> 16) as usize % 17;
        let (chunk, tail) = rest.split_at(n.min(rest.len()));
        chunks.push(chunk);
        rest = tail;
    }
    chunks
}

/// The lines a splitter with `limit` hands out for `data`, from the whole text: `Ok(line)` or `Err(raw line)`
/// for one over the limit.
fn model_lines(data: &[u8], limit: usize) -> Vec<Result<Vec<u8>, Vec<u8>>> {
    let mut out = Vec::new();
    let mut rest = data;
    while let Some(at) = rest.iter().position(|b| *b == b'\n') {
        let raw = &rest[..at];
        rest = &rest[at + 1..];
        if raw.len() > limit {
            out.push(Err(raw.to_vec()));
        } else {
            out.push(Ok(raw.strip_suffix(b"\r").unwrap_or(raw).to_vec()));
        }
    }
    // An unfinished line is reported as soon as it is over the limit, before its newline.
    if rest.len() > limit {
        out.push(Err(rest.to_vec()));
    }
    out
}

fn check_lines(data: &[u8], limit: usize, seed: u8) {
    let (got, held) = client_lines(limit, &cut(data, seed));
    assert!(held <= limit, "held {held} bytes with a limit of {limit}");
    let model = model_lines(data, limit);
    assert_eq!(got.len(), model.len(), "{got:?} vs {model:?}");
    for (got, want) in got.iter().zip(&model) {
        match (got, want) {
            (ClientLine::Line(line), Ok(want)) => assert_eq!(line, want),
            (ClientLine::TooLong(head), Err(raw)) => {
                assert!(raw.starts_with(head), "the head is the line's start");
                assert!(head.len() <= HEAD && head.len() >= HEAD.min(limit + 1), "a head of {} bytes", head.len());
            }
            other => panic!("{other:?}"),
        }
    }
}

/// What the SSE parser hands out, without the heads (which depend on the cut).
#[derive(Debug, PartialEq)]
enum Item {
    Event { id: Option<String>, retry: Option<u128>, data: String },
    TooLarge,
}

fn items(got: Vec<ClientSse>) -> Vec<Item> {
    got.into_iter()
        .map(|item| match item {
            ClientSse::Event { id, retry, data } => Item::Event { id, retry, data },
            ClientSse::TooLarge(head) => {
                assert!(head.len() <= HEAD, "a head of {} bytes", head.len());
                Item::TooLarge
            }
        })
        .collect()
}

/// The events of `data` read as whole lines (the SSE specification's "interpret the stream"), an event's data
/// bounded by `limit` and a line by `limit + HEAD`.
fn model_sse(data: &[u8], limit: usize) -> Vec<Item> {
    let mut out = Vec::new();
    let (mut id, mut retry, mut text) = (None, None, String::new());
    let (mut lines, mut started, mut skipping) = (0usize, false, false);
    for line in model_lines(data, limit + HEAD) {
        let Ok(line) = line else {
            if !skipping {
                out.push(Item::TooLarge);
            }
            skipping = true;
            (id, retry, text, lines, started) = (None, None, String::new(), 0, false);
            continue;
        };
        if line.is_empty() {
            if skipping {
                skipping = false;
            } else if started {
                out.push(Item::Event { id: id.take(), retry: retry.take(), data: std::mem::take(&mut text) });
                (lines, started) = (0, false);
            }
            continue;
        }
        if skipping {
            continue;
        }
        let line = String::from_utf8_lossy(&line).into_owned();
        let (field, value) = match line.find(':') {
            Some(at) => (&line[..at], line[at + 1..].strip_prefix(' ').unwrap_or(&line[at + 1..])),
            None => (line.as_str(), ""),
        };
        match field {
            "" => continue,
            "data" => {
                let joint = usize::from(lines > 0);
                if text.len() + joint + value.len() > limit {
                    out.push(Item::TooLarge);
                    skipping = true;
                    (id, retry, text, lines, started) = (None, None, String::new(), 0, false);
                    continue;
                }
                if joint == 1 {
                    text.push('\n');
                }
                text.push_str(value);
                lines += 1;
            }
            "id" => id = Some(value.to_owned()),
            "retry" => {
                if let Ok(ms) = value.parse::<u64>() {
                    retry = Some(u128::from(ms));
                }
            }
            _ => {}
        }
        started = true;
    }
    out
}

fn check_sse(data: &[u8], limit: usize, seed: u8) {
    let (got, held) = client_sse(limit, &cut(data, seed));
    assert!(held <= 2 * limit + HEAD, "held {held} bytes with a limit of {limit}");
    let got = items(got);
    assert_eq!(got, model_sse(data, limit));
}

fuzz_target!(|input: &[u8]| {
    let [pick, seed, data @ ..] = input else { return };
    let limit = if pick & 0x80 != 0 { 4096 } else { 1 + usize::from(pick % 64) };
    check_lines(data, limit, *seed);
    check_sse(data, limit, *seed);

    if let Some(id) = client_answered_id(data) {
        let text = String::from_utf8_lossy(data);
        let spelled = match &id {
            RequestId::Number(n) => n.to_string(),
            RequestId::String(s) => serde_json::to_string(&**s).unwrap_or_default(),
        };
        assert!(text.contains("\"id\""), "{id:?} read from {text:?}");
        // A string id may be spelled with escapes; a number is spelled as it reads.
        if matches!(id, RequestId::Number(_)) {
            assert!(text.contains(&spelled), "{id:?} read from {text:?}");
        }
    }
});
