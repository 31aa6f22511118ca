//! Reference implementations the fuzz targets compare the runtime against, written from the RFCs rather than
//! copied from the runtime, and the plumbing the targets share.

/// The two RFC 4648 alphabets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alphabet {
    /// `A-Z a-z 0-9 + /` (section 4).
    Standard,
    /// `A-Z a-z 0-9 - _` (section 5).
    UrlSafe,
}

fn sextet(alphabet: Alphabet, c: u8) -> Option<u32> {
    let v = match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' if alphabet == Alphabet::Standard => 62,
        b'/' if alphabet == Alphabet::Standard => 63,
        b'-' if alphabet == Alphabet::UrlSafe => 62,
        b'_' if alphabet == Alphabet::UrlSafe => 63,
        _ => return None,
    };
    Some(u32::from(v))
}

/// Strict RFC 4648 decoding: with `padded`, the length is a multiple of 4 and `=` pads the last group only; without,
/// there is no `=` at all. Either way the bits left over in the last group are zero (one encoding per byte string).
pub fn base64_decode(text: &str, alphabet: Alphabet, padded: bool) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let data = if padded {
        if !bytes.len().is_multiple_of(4) {
            return None;
        }
        let pad = bytes.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 {
            return None;
        }
        &bytes[..bytes.len() - pad]
    } else {
        bytes
    };
    if data.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(data.len() / 4 * 3 + 2);
    for group in data.chunks(4) {
        let mut n = 0u32;
        for &c in group {
            n = n << 6 | sextet(alphabet, c)?;
        }
        let bits = 6 * group.len();
        let whole = bits / 8;
        let spare = bits - 8 * whole;
        if n & ((1 << spare) - 1) != 0 {
            return None;
        }
        n >>= spare;
        for i in (0..whole).rev() {
            out.push((n >> (8 * i)) as u8);
        }
    }
    Some(out)
}

/// RFC 4648 encoding.
pub fn base64_encode(bytes: &[u8], alphabet: Alphabet, padded: bool) -> String {
    const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let table = if alphabet == Alphabet::Standard { STANDARD } else { URL_SAFE };
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let mut n = 0u32;
        for (i, &b) in group.iter().enumerate() {
            n |= u32::from(b) << (16 - 8 * i);
        }
        let chars = group.len() + 1;
        for i in 0..4 {
            if i < chars {
                out.push(table[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else if padded {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_follows_rfc_4648() {
        for (plain, padded) in [("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foobar", "Zm9vYmFy")] {
            assert_eq!(base64_encode(plain.as_bytes(), Alphabet::Standard, true), padded);
            assert_eq!(base64_decode(padded, Alphabet::Standard, true).as_deref(), Some(plain.as_bytes()));
            let bare = padded.trim_end_matches('=');
            assert_eq!(base64_decode(bare, Alphabet::UrlSafe, false).as_deref(), Some(plain.as_bytes()));
        }
        for bad in ["Zg=", "Zh==", "Z===", "Zm=v", "Zm9", "Zm9v\n", "-_=="] {
            assert_eq!(base64_decode(bad, Alphabet::Standard, true), None, "{bad}");
        }
        assert_eq!(base64_decode("-_8", Alphabet::UrlSafe, false), Some(vec![0xfb, 0xff]));
        assert_eq!(base64_decode("Zg==", Alphabet::UrlSafe, false), None);
        assert_eq!(base64_decode("Z", Alphabet::UrlSafe, false), None);
    }
}
