//! SEP-3415's receiver-published document, the fourth way an endpoint is verified: the callback URL's `https`
//! origin serves `/.well-known/mcp-webhook-receiver.json`, `{"receivers": ["/hooks/"]}`, the path prefixes under it
//! that take MCP webhook deliveries, and a URL under one of them is verified without a challenge POST (control of
//! the origin is the proof of intent). The document is fetched through the client deliveries use (the SSRF guard,
//! no redirects), and kept per origin as long as its `Cache-Control` allows, at most a day: five minutes without
//! one, and one minute for an origin that has none (or an unreadable one), whose endpoints get the challenge.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use super::deliver::Sender;
use crate::base::sync::Unpoisoned;

/// Where an origin publishes the document.
pub(crate) const PATH: &str = "/.well-known/mcp-webhook-receiver.json";
/// How long a document without `Cache-Control: max-age` is kept.
const DEFAULT_KEEP: Duration = Duration::from_secs(5 * 60);
/// How long a document is kept at most, whatever it says.
const MAX_KEEP: Duration = Duration::from_secs(24 * 60 * 60);
/// How long an origin without a (readable) document is believed to have none.
const ABSENT_KEEP: Duration = Duration::from_secs(60);
/// How many origins are remembered.
const MAX_ORIGINS: usize = 1024;

/// An origin's path prefixes (`None`: it has no document), and until when they are believed.
type Kept = (Option<Vec<String>>, Instant);

/// The documents of the origins asked lately.
#[derive(Default)]
pub(crate) struct Documents {
    kept: Mutex<HashMap<String, Kept>>,
}

impl Documents {
    /// Whether `url`'s origin publishes a document that covers its path.
    pub(crate) async fn cover(&self, sender: &Sender, url: &str) -> bool {
        let Ok(url) = reqwest::Url::parse(url) else { return false };
        let path = url.path().to_owned();
        // An encoded dot or slash could name, once the receiver decodes it, a path outside the prefix.
        let lowered = path.to_ascii_lowercase();
        if ["%2e", "%2f", "%5c"].iter().any(|escaped| lowered.contains(escaped)) {
            return false;
        }
        let origin = url.origin().ascii_serialization();
        let prefixes = match self.kept(&origin) {
            Some(prefixes) => prefixes,
            None => {
                let fetched = sender.get(&format!("{origin}{PATH}")).await;
                let found = fetched.and_then(|(body, cache_control)| Some((read(&body)?, cache_control)));
                let (prefixes, keep) = match found {
                    Some((prefixes, cache_control)) => (Some(prefixes), keep_for(cache_control.as_deref())),
                    None => (None, ABSENT_KEEP),
                };
                self.keep(origin, prefixes.clone(), keep);
                prefixes
            }
        };
        prefixes.is_some_and(|prefixes| prefixes.iter().any(|prefix| path.starts_with(prefix.as_str())))
    }

    fn kept(&self, origin: &str) -> Option<Option<Vec<String>>> {
        let kept = self.kept.locked();
        kept.get(origin).filter(|(_, until)| *until > Instant::now()).map(|(prefixes, _)| prefixes.clone())
    }

    fn keep(&self, origin: String, prefixes: Option<Vec<String>>, keep: Duration) {
        let now = Instant::now();
        let mut kept = self.kept.locked();
        if kept.len() >= MAX_ORIGINS {
            kept.retain(|_, (_, until)| *until > now);
        }
        if kept.len() >= MAX_ORIGINS {
            let soonest = kept.iter().min_by_key(|(_, (_, until))| *until).map(|(origin, _)| origin.clone());
            if let Some(soonest) = soonest {
                kept.remove(&soonest);
            }
        }
        kept.insert(origin, (prefixes, now + keep));
    }
}

/// A document's path prefixes: `receivers`, each an absolute path; `None` if it is not such a document.
fn read(body: &[u8]) -> Option<Vec<String>> {
    let document: Value = serde_json::from_slice(body).ok()?;
    let receivers = document.get("receivers")?.as_array()?;
    receivers.iter().map(|r| r.as_str().filter(|p| p.starts_with('/')).map(str::to_owned)).collect()
}

/// How long a document may be kept, by its `Cache-Control`: `no-store` or `no-cache` not at all, `max-age` as it
/// says (at most a day), else five minutes.
fn keep_for(cache_control: Option<&str>) -> Duration {
    let Some(directives) = cache_control else { return DEFAULT_KEEP };
    let mut keep = DEFAULT_KEEP;
    for directive in directives.split(',').map(|d| d.trim().to_ascii_lowercase()) {
        if directive == "no-store" || directive == "no-cache" {
            return Duration::ZERO;
        }
        if let Some(seconds) = directive.strip_prefix("max-age=").and_then(|s| s.trim_matches('"').parse::<u64>().ok())
        {
            keep = Duration::from_secs(seconds).min(MAX_KEEP);
        }
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_lists_absolute_path_prefixes() {
        assert_eq!(
            read(br#"{"receivers": ["/hooks/", "/mcp/events/"]}"#),
            Some(vec!["/hooks/".into(), "/mcp/events/".into()])
        );
        assert_eq!(read(br#"{"receivers": []}"#), Some(vec![]));
        assert_eq!(read(br#"{"receivers": ["hooks/"]}"#), None, "not an absolute path");
        assert_eq!(read(br#"{"receivers": "/hooks/"}"#), None);
        assert_eq!(read(br#"{"other": 1}"#), None);
        assert_eq!(read(b"<html>"), None);
    }

    #[test]
    fn a_document_is_kept_as_its_cache_control_says() {
        assert_eq!(keep_for(None), DEFAULT_KEEP);
        assert_eq!(keep_for(Some("public, max-age=120")), Duration::from_secs(120));
        assert_eq!(keep_for(Some("max-age=31536000")), MAX_KEEP);
        assert_eq!(keep_for(Some("no-store")), Duration::ZERO);
        assert_eq!(keep_for(Some("max-age=60, no-cache")), Duration::ZERO);
        assert_eq!(keep_for(Some("public")), DEFAULT_KEEP);
    }
}
