//! List cursors (`decode_cursor` in mcp-runtime/src/server/registry.rs). The input's first 8 bytes are a page
//! index, the rest a cursor as a client might send it.
//!
//! - Every list's cursor for any index decodes, for that list only, to that index.
//! - A cursor decodes exactly when it is strict unpadded base64url (RFC 4648 section 5, checked by a decoder of our
//!   own) of `<list>:<index>`, and then to that index; at most one list accepts it; a refusal is -32602.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp::__fuzz::{decode_cursor, encode_cursor, ListKind};
use mcp::ErrorCode;
use mcp_fuzz::{base64_decode, Alphabet};

fn key(kind: ListKind) -> &'static str {
    match kind {
        ListKind::Tools => "tools",
        ListKind::Prompts => "prompts",
        ListKind::Resources => "resources",
        ListKind::Templates => "resourceTemplates",
    }
}

/// What a cursor names, read from its specification.
fn model(kind: ListKind, cursor: &str) -> Option<usize> {
    let text = String::from_utf8(base64_decode(cursor, Alphabet::UrlSafe, false)?).ok()?;
    let (list, index) = text.split_once(':')?;
    if list != key(kind) {
        return None;
    }
    index.parse().ok()
}

fuzz_target!(|data: &[u8]| {
    let (index, rest) = data.split_at(data.len().min(8));
    let mut bytes = [0u8; 8];
    bytes[..index.len()].copy_from_slice(index);
    let index = u64::from_le_bytes(bytes) as usize;
    for kind in ListKind::ALL {
        let cursor = encode_cursor(kind, index);
        for other in ListKind::ALL {
            let decoded = decode_cursor(other, &cursor).ok();
            assert_eq!(decoded, (other == kind).then_some(index), "{kind:?} cursor {cursor:?} read as {other:?}");
        }
    }

    let Ok(cursor) = std::str::from_utf8(rest) else { return };
    let mut accepted = 0;
    for kind in ListKind::ALL {
        let decoded = decode_cursor(kind, cursor);
        if let Err(e) = &decoded {
            assert_eq!(e.code, ErrorCode::INVALID_PARAMS, "{e}");
        }
        let decoded = decoded.ok();
        assert_eq!(decoded, model(kind, cursor), "{kind:?} cursor {cursor:?}");
        accepted += usize::from(decoded.is_some());
    }
    assert!(accepted <= 1, "{cursor:?} names a page of {accepted} lists");
});
