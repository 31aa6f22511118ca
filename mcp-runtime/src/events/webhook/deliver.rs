//! The POSTs of webhook delivery, behind the SSRF guard: `https` only, no redirects, and every address a connection
//! goes to checked after resolution (so a name that resolves elsewhere at delivery time than at subscribe time is
//! still caught), against the ranges that are not globally routable, unless allowed. Each POST is signed by the
//! Standard Webhooks scheme (the `standardwebhooks` crate) with a fresh timestamp.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

use serde_json::{json, Value};

use super::Webhooks;
use crate::base::sync::Unpoisoned;
use crate::wire::error::{Error, ErrorCode};

/// What became of one POST.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// `2xx`: accepted.
    Accepted,
    /// `410` or `413`: refused for good; not to be tried again.
    Refused(&'static str),
    /// Anything else: worth another try. The category the SEP's `lastError` names.
    Failed(&'static str),
}

/// The HTTP client of webhook delivery.
pub(crate) struct Sender {
    http: reqwest::Client,
    guard: Arc<Guard>,
    challenges: Challenges,
}

/// The verification handshakes sent to each host in its current window: at most `max` per `window`.
struct Challenges {
    max: u32,
    window: Duration,
    /// By host: when its window started, and how many were sent in it.
    sent: Mutex<HashMap<String, (Instant, u32)>>,
}

impl Challenges {
    /// How many hosts are remembered before those whose window has ended are forgotten.
    const REMEMBERED: usize = 1024;

    /// Counts one more handshake to `host`; -32025 when its window has had its share.
    fn admit(&self, host: &str) -> Result<(), Error> {
        let now = Instant::now();
        let mut sent = self.sent.locked();
        if sent.len() >= Challenges::REMEMBERED {
            sent.retain(|_, (since, _)| now.duration_since(*since) < self.window);
        }
        let (since, count) = sent.entry(host.to_owned()).or_insert((now, 0));
        if now.duration_since(*since) >= self.window {
            (*since, *count) = (now, 0);
        }
        if *count >= self.max {
            let wait = self.window.saturating_sub(now.duration_since(*since));
            return Err(Error::new(
                ErrorCode::RESOURCE_EXHAUSTED,
                format!(
                    "no more verification requests to {host} for {} s (at most {} per {} s); subscribe again then",
                    wait.as_secs().max(1),
                    self.max,
                    self.window.as_secs()
                ),
            )
            .with_data(json!({ "limit": "verifications", "max": self.max })));
        }
        *count += 1;
        Ok(())
    }
}

/// Which addresses deliveries may reach.
struct Guard {
    allowed: Vec<IpAddr>,
}

impl Guard {
    fn allows(&self, ip: IpAddr) -> bool {
        global(ip) || self.allowed.contains(&ip)
    }
}

/// Resolves names and keeps only the addresses the guard allows: what reqwest connects to.
struct Resolver(Arc<Guard>);

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let guard = self.0.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> = found.into_iter().filter(|a| guard.allows(a.ip())).collect();
            if allowed.is_empty() {
                return Err(format!("{host} resolves to no globally routable address (SSRF guard)").into());
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

impl Sender {
    pub(crate) fn new(settings: &Webhooks) -> Result<Sender, String> {
        let guard = Arc::new(Guard { allowed: settings.allowed.clone() });
        // No proxy, whatever the environment says (`HTTPS_PROXY`): through one, only the proxy's address would be
        // checked, and it would connect anywhere.
        let mut builder = reqwest::Client::builder()
            .no_proxy()
            .https_only(true)
            .redirect(reqwest::redirect::Policy::none())
            .timeout(settings.timeout)
            .dns_resolver(Arc::new(Resolver(guard.clone())));
        for pem in &settings.roots {
            let certificate = reqwest::Certificate::from_pem(pem)
                .map_err(|e| format!("Webhooks::root_certificate: not a PEM certificate: {e}"))?;
            builder = builder.add_root_certificate(certificate);
        }
        let http = builder.build().map_err(|e| format!("the webhook client could not be built: {e}"))?;
        let challenges = Challenges {
            max: settings.verifications_per_host,
            window: settings.verification_window,
            sent: Mutex::default(),
        };
        Ok(Sender { http, guard, challenges })
    }

    /// POSTs `body` to `url` as message `id` of subscription `subscription`, signed with each of `secrets`.
    pub(crate) async fn post(&self, url: &str, subscription: &str, id: &str, body: &str, secrets: &[&str]) -> Answer {
        match self.send(url, subscription, id, body, secrets).await {
            Ok(response) => classify(response.status().as_u16()),
            Err(e) => Answer::Failed(e),
        }
    }

    /// One signed POST; `Err`: the category of why it did not get an answer.
    async fn send(
        &self,
        url: &str,
        subscription: &str,
        id: &str,
        body: &str,
        secrets: &[&str],
    ) -> Result<reqwest::Response, &'static str> {
        if self.refuses_literal(url) {
            return Err("connection_refused");
        }
        let timestamp = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
        let signature = sign(id, timestamp, body, secrets);
        self.http
            .post(url)
            .header("content-type", "application/json")
            .header("webhook-id", id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .header("x-mcp-subscription-id", subscription)
            .body(body.to_owned())
            .send()
            .await
            .map_err(|e| category(&e))
    }

    /// Whether `url` names an address the guard refuses: an address in the URL itself is never resolved, so it is
    /// checked here.
    fn refuses_literal(&self, url: &str) -> bool {
        let literal = reqwest::Url::parse(url)
            .ok()
            .and_then(|u| u.host_str().map(|h| h.trim_start_matches('[').trim_end_matches(']').to_owned()))
            .and_then(|h| h.parse::<IpAddr>().ok());
        literal.is_some_and(|ip| !self.guard.allows(ip))
    }

    /// A GET behind the same guard (a receiver's [well-known document](super::well_known)): the body of a `2xx`
    /// answer, at most 64 KiB, and its `Cache-Control`; `None` for anything else.
    pub(crate) async fn get(&self, url: &str) -> Option<(Vec<u8>, Option<String>)> {
        if self.refuses_literal(url) {
            return None;
        }
        let response = self.http.get(url).header("accept", "application/json").send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        let cache_control = response.headers().get("cache-control").and_then(|v| v.to_str().ok()).map(str::to_owned);
        Some((small_body(response).await?, cache_control))
    }

    /// The verification handshake: a signed `verification` envelope whose challenge the endpoint must echo in a
    /// `2xx` body. -32027 with `data.reason` when it does not; -32025 when its host has had its share of
    /// handshakes in this window ([`Webhooks::verification_rate`]).
    pub(crate) async fn verify(&self, url: &str, subscription: &str, secret: &str) -> Result<(), Error> {
        let host = reqwest::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_ascii_lowercase));
        self.challenges.admit(host.as_deref().unwrap_or(url))?;
        let challenge = crate::events::random_id();
        let body = json!({ "type": "verification", "challenge": challenge }).to_string();
        let id = format!("msg_verification_{}", crate::events::random_id());
        let reason = match self.send(url, subscription, &id, &body, &[secret]).await {
            Err(reason) => reason,
            Ok(response) => match classify(response.status().as_u16()) {
                Answer::Accepted => {
                    let echoed = small_body(response).await.and_then(|b| serde_json::from_slice::<Value>(&b).ok());
                    let echoed = echoed.as_ref().and_then(|v| v.get("challenge")).and_then(Value::as_str);
                    if echoed.is_some_and(|e| constant_time_eq(e.as_bytes(), challenge.as_bytes())) {
                        return Ok(());
                    }
                    "challenge_failed"
                }
                Answer::Refused(category) | Answer::Failed(category) => category,
            },
        };
        Err(Error::new(
            ErrorCode::CALLBACK_ENDPOINT_ERROR,
            format!("the webhook endpoint {url:?} did not confirm the subscription ({reason})"),
        )
        .with_data(json!({ "reason": reason })))
    }
}

/// A response's body, if it is at most 64 KiB (an echoed challenge is a few bytes).
async fn small_body(mut response: reqwest::Response) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.ok()? {
        body.extend_from_slice(&chunk);
        if body.len() > 64 * 1024 {
            return None;
        }
    }
    Some(body)
}

/// The `webhook-signature` header: one `v1,` signature per secret, space-separated.
fn sign(id: &str, timestamp: i64, body: &str, secrets: &[&str]) -> String {
    let signatures: Vec<String> = secrets
        .iter()
        .filter_map(|secret| standardwebhooks::Webhook::new(secret).ok()?.sign(id, timestamp, body.as_bytes()).ok())
        .collect();
    signatures.join(" ")
}

fn classify(status: u16) -> Answer {
    match status {
        200..=299 => Answer::Accepted,
        410 | 413 => Answer::Refused("http_4xx"),
        400..=499 => Answer::Failed("http_4xx"),
        _ => Answer::Failed("http_5xx"),
    }
}

/// The SEP's category of a failed POST: never the endpoint's own words.
fn category(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        return "timeout";
    }
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        if cause.downcast_ref::<rustls::Error>().is_some() {
            return "tls_error";
        }
        source = cause.source();
    }
    "connection_refused"
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether an address is globally routable: not in the IANA special-purpose ranges that are not (loopback,
/// private, shared, link-local, documentation, benchmarking, multicast, reserved; unique-local and link-local IPv6;
/// an IPv4 address mapped into IPv6 as its IPv4 address is).
pub(crate) fn global(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => global_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => global_v4(v4),
            None => global_v6(v6),
        },
    }
}

fn global_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(a == 0
        || a == 10
        || a == 127
        || (a == 100 && (64..128).contains(&b))
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 0 && c == 2)
        || (a == 192 && b == 168)
        || (a == 198 && (18..20).contains(&b))
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
        || a >= 224)
}

fn global_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    !(ip.is_loopback()
        || ip.is_unspecified()
        || (s[0] & 0xfe00) == 0xfc00
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] & 0xff00) == 0xff00
        || (s[0] == 0x2001 && s[1] == 0x0db8)
        || (s[0] == 0x2001 && s[1] < 0x0200)
        || s[0] == 0x2002
        || s[..6] == [0; 6]
        || (s[0] == 0x0100 && s[1] == 0 && s[2] == 0 && s[3] == 0)
        || (s[0] == 0x0064 && s[1] == 0xff9b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guard_refuses_what_is_not_globally_routable() {
        for blocked in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "2001:db8::1",
            "2001::1",
            "2001:1ff::1",
            "2002:a00:1::1",
            "::10.0.0.1",
            "64:ff9b:1::a00:1",
        ] {
            assert!(!global(blocked.parse().unwrap()), "{blocked} must be refused");
        }
        for open in ["8.8.8.8", "1.1.1.1", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8"] {
            assert!(global(open.parse().unwrap()), "{open} is globally routable");
        }
        let guard = Guard { allowed: vec!["127.0.0.1".parse().unwrap()] };
        assert!(guard.allows("127.0.0.1".parse().unwrap()));
        assert!(!guard.allows("127.0.0.2".parse().unwrap()));
    }

    #[test]
    fn verification_handshakes_are_limited_per_host_and_window() {
        let challenges = Challenges { max: 2, window: Duration::from_millis(200), sent: Mutex::default() };
        challenges.admit("hooks.example").unwrap();
        challenges.admit("hooks.example").unwrap();
        let refused = challenges.admit("hooks.example").unwrap_err();
        assert_eq!(refused.code, ErrorCode::RESOURCE_EXHAUSTED);
        assert_eq!(refused.data, Some(json!({ "limit": "verifications", "max": 2 })));
        challenges.admit("other.example").unwrap();
        std::thread::sleep(Duration::from_millis(250));
        challenges.admit("hooks.example").unwrap();
    }

    #[test]
    fn statuses_are_classified_as_the_sep_says() {
        assert_eq!(classify(200), Answer::Accepted);
        assert_eq!(classify(204), Answer::Accepted);
        assert_eq!(classify(410), Answer::Refused("http_4xx"));
        assert_eq!(classify(413), Answer::Refused("http_4xx"));
        assert_eq!(classify(404), Answer::Failed("http_4xx"));
        assert_eq!(classify(503), Answer::Failed("http_5xx"));
    }

    #[test]
    fn signatures_are_standard_webhooks_ones_one_per_secret() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let header = sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, r#"{"test": 2432232314}"#, &[secret, secret]);
        // The Standard Webhooks specification's own example.
        let one = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
        assert_eq!(header, format!("{one} {one}"));
    }
}
