//! The pages of a list: each list's pages made once when it changes (raw JSON, with `nextCursor` and the 2026
//! era's extra members), and the opaque cursors that name a page.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::ListKind;
use crate::wire::error::Error;

pub(super) fn paginate(
    kind: ListKind,
    items: &[&Value],
    page_size: usize,
    extra: Option<&Map<String, Value>>,
) -> Vec<Arc<RawValue>> {
    #[derive(Serialize)]
    struct Page<'a> {
        #[serde(flatten)]
        items: BTreeMap<&'static str, &'a [&'a Value]>,
        #[serde(rename = "nextCursor", skip_serializing_if = "Option::is_none")]
        next_cursor: Option<String>,
        #[serde(flatten, skip_serializing_if = "Option::is_none")]
        extra: Option<&'a Map<String, Value>>,
    }
    let chunks: Vec<&[&Value]> = if items.is_empty() { vec![&[][..]] } else { items.chunks(page_size).collect() };
    let count = chunks.len();
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, chunk)| {
            let page = Page {
                items: BTreeMap::from([(kind.key(), chunk)]),
                next_cursor: (i + 1 < count).then(|| encode_cursor(kind, i + 1)),
                extra,
            };
            Arc::from(serde_json::value::to_raw_value(&page).expect("a page serializes"))
        })
        .collect()
}

/// An opaque cursor: the list and the page (or, for lists computed per request, the offset), base64url.
pub(crate) fn encode_cursor(kind: ListKind, index: usize) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{}:{index}", kind.key()))
}

pub(crate) fn decode_cursor(kind: ListKind, cursor: &str) -> Result<usize, Error> {
    let bad = || Error::invalid_params(format!("invalid cursor {cursor:?}"));
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(cursor).map_err(|_| bad())?;
    let text = String::from_utf8(bytes).map_err(|_| bad())?;
    let (key, index) = text.split_once(':').ok_or_else(bad)?;
    if key != kind.key() {
        return Err(bad());
    }
    index.parse().map_err(|_| bad())
}
