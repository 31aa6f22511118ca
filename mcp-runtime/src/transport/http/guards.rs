//! The checks every request passes first: Host and Origin, the protocol version header, what it accepts.

use std::sync::Mutex;

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;

use super::{json_body, HttpOptions, VERSION_NAME};
use crate::base::sync::Unpoisoned;
use crate::wire::error::{Error, ErrorCode};
use crate::wire::jsonrpc::Frame;
use crate::wire::protocol::SUPPORTED_PROTOCOL_VERSIONS;

pub(super) fn error_response(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Response {
    let body = Frame::error(None, &Error::new(code, message));
    json_body(status, body)
}

pub(super) fn plain(status: StatusCode, message: &'static str) -> Response {
    error_response(status, ErrorCode::INVALID_REQUEST, message)
}

/// The host name of a `Host` header value or of an origin's authority: without its port, and without the brackets of
/// an IPv6 literal.
pub(super) fn host_name(authority: &str) -> &str {
    let authority = authority.trim();
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or_default();
    }
    match authority.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) => h,
        _ => authority,
    }
}

/// Whether a `Host` value (or an origin's authority) names this machine: `localhost` (in any case) or a loopback IP
/// address. A name that merely starts with `127.` (`127.evil.example`) is a name, resolved by DNS, and not loopback.
pub(super) fn is_loopback_host(authority: &str) -> bool {
    let name = host_name(authority);
    // The usual spellings first, without parsing an address.
    matches!(name, "127.0.0.1" | "::1")
        || name.eq_ignore_ascii_case("localhost")
        || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether an authority (`name` or `name:port`, `[v6]` or `[v6]:port`) spells a port.
pub(super) fn has_port(authority: &str) -> bool {
    let authority = authority.trim();
    match authority.strip_prefix('[') {
        Some(rest) => rest.split_once(']').is_some_and(|(_, after)| after.starts_with(':')),
        None => authority.rsplit_once(':').is_some_and(|(_, p)| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit())),
    }
}

/// Whether an allowed `Host` entry admits a `Host` value: the same authority, or, when the entry names no port,
/// the same name with any port.
pub(super) fn host_allowed(allowed: &str, host: &str) -> bool {
    allowed.trim().eq_ignore_ascii_case(host.trim())
        || (!has_port(allowed) && host_name(allowed).eq_ignore_ascii_case(host_name(host)))
}

/// The Host and Origin values refused so far, so that each is logged once (up to a bound, so that a client
/// sending a new name per request cannot grow it without end).
#[derive(Default)]
pub(super) struct RefusedNames {
    pub(super) seen: Mutex<std::collections::HashSet<String>>,
}

impl RefusedNames {
    /// The most names remembered; past it, refusals are no longer logged.
    pub(super) const MOST: usize = 256;

    /// Whether this is the first refusal of `value` (as a `Host` or an `Origin`).
    pub(super) fn first(&self, kind: &str, value: &str) -> bool {
        let mut seen = self.seen.locked();
        seen.len() < Self::MOST && seen.insert(format!("{kind} {}", value.to_ascii_lowercase()))
    }
}

/// DNS-rebinding protection: `Host` and `Origin` must be loopback or allowed. The first refusal of each value is
/// logged at `warn`, with the option that would allow it.
/// Checks `Host` (or, in HTTP/2, the request's authority) and `Origin` against DNS rebinding. A request with two of
/// either, or with no host at all, is 400: which one a proxy or a check would read is anyone's guess.
pub(super) fn check_origin(
    options: &HttpOptions,
    refused: &RefusedNames,
    headers: &HeaderMap,
    authority: Option<&str>,
) -> Result<(), Response> {
    // Each header looked up once: its only value, or a refusal when it is given twice.
    let only = |name: header::HeaderName, what: &str| {
        let mut values = headers.get_all(name).into_iter();
        match (values.next(), values.next()) {
            (first, None) => Ok(first),
            (_, Some(_)) => Err(error_response(
                StatusCode::BAD_REQUEST,
                ErrorCode::INVALID_REQUEST,
                format!("bad request: the {what} header is given more than once"),
            )),
        }
    };
    let (host, origin) = (only(header::HOST, "Host")?, only(header::ORIGIN, "Origin")?);
    let host = match host {
        Some(h) => h.to_str().ok(),
        None => authority,
    };
    if host.is_none() {
        return Err(error_response(
            StatusCode::BAD_REQUEST,
            ErrorCode::INVALID_REQUEST,
            "bad request: the Host header is missing (or not text)",
        ));
    }
    if options.allow_any_origin {
        return Ok(());
    }
    if let Some(host) = host {
        if !is_loopback_host(host) && !options.allowed_hosts.iter().any(|allowed| host_allowed(allowed, host)) {
            if refused.first("host", host) {
                tracing::warn!(
                    host,
                    "refused a request (403) whose Host is not allowed; to serve this name, pass --allow-host {} \
                     (or HttpOptions::allow_host). Logged once per name",
                    host_name(host)
                );
            }
            return Err(plain(StatusCode::FORBIDDEN, "forbidden: the Host header is not allowed"));
        }
    }
    if let Some(origin) = origin {
        let origin = origin.to_str().unwrap_or_default();
        // `scheme://host[:port]`; anything else (`null`, a path) is not a loopback origin.
        let loopback = origin.split_once("://").is_some_and(|(scheme, authority)| {
            (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https"))
                && !authority.contains(['/', '@', '?', '#'])
                && is_loopback_host(authority)
        });
        if !loopback && !options.allowed_origins.iter().any(|o| o.trim().eq_ignore_ascii_case(origin.trim())) {
            if refused.first("origin", origin) {
                tracing::warn!(
                    origin,
                    "refused a request (403) whose Origin is not allowed; to serve pages of this origin, pass \
                     --allow-origin {origin} (or HttpOptions::allow_origin). Logged once per origin"
                );
            }
            return Err(plain(StatusCode::FORBIDDEN, "forbidden: the Origin header is not allowed"));
        }
    }
    Ok(())
}

/// Whether the request's version header names a version of the 2026 era (which has no GET stream and no DELETE);
/// one neither era speaks is refused by [`check_version`].
pub(super) fn names_2026_version(headers: &HeaderMap) -> bool {
    let version = headers.get(&VERSION_NAME).and_then(|v| v.to_str().ok());
    version.and_then(crate::context::Era::of_version) == Some(crate::context::Era::V2026)
}

/// The protocol version of a request: the header, or 2025-03-26 when it is missing; unsupported is 400.
pub(super) fn check_version(headers: &HeaderMap) -> Result<&'static str, Response> {
    match headers.get(&VERSION_NAME) {
        None => Ok("2025-03-26"),
        Some(v) => {
            let v = v.to_str().unwrap_or_default();
            if let Some(supported) = SUPPORTED_PROTOCOL_VERSIONS.iter().find(|s| **s == v) {
                Ok(supported)
            } else {
                Err(error_response(
                    StatusCode::BAD_REQUEST,
                    ErrorCode::INVALID_REQUEST,
                    format!(
                        "unsupported MCP-Protocol-Version {v:?}; supported: {}",
                        SUPPORTED_PROTOCOL_VERSIONS.join(", ")
                    ),
                ))
            }
        }
    }
}

/// Whether the `Accept` header takes every one of `kinds` (at most two), in one pass over it.
pub(super) fn accepts(headers: &HeaderMap, kinds: &[&str]) -> bool {
    debug_assert!(kinds.len() <= 2);
    let mut missing = kinds.len();
    let mut seen = [false; 2];
    // Read as bytes: a media range is ASCII, and a value that is not cannot name one of `kinds`.
    for t in headers.get_all(header::ACCEPT).iter().flat_map(|v| v.as_bytes().split(|b| *b == b',')) {
        let t = t.split(|b| *b == b';').next().unwrap_or_default().trim_ascii();
        if t == b"*/*" {
            return true;
        }
        for (kind, seen) in kinds.iter().zip(&mut seen) {
            if !*seen && t.eq_ignore_ascii_case(kind.as_bytes()) {
                *seen = true;
                missing -= 1;
            }
        }
        if missing == 0 {
            return true;
        }
    }
    false
}

/// The client's address as the balancer in front saw it (`HttpOptions::trust_forwarded`): the last `for=` of
/// `Forwarded` (RFC 7239), else the last entry of `X-Forwarded-For`, the one the nearest proxy added. `None` when
/// neither names an address (an obfuscated `for=_hidden`, `unknown`, garbage): the socket's peer stands.
pub(super) fn forwarded_for(headers: &HeaderMap) -> Option<std::net::IpAddr> {
    let last = |name: &str| -> Option<String> {
        let values: Vec<&str> = headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).collect();
        values.last().map(|v| (*v).to_owned())
    };
    let node = match last("forwarded") {
        Some(value) => {
            let element = value.rsplit(',').next().unwrap_or_default();
            element
                .split(';')
                .filter_map(|pair| pair.trim().split_once('='))
                .find(|(key, _)| key.trim().eq_ignore_ascii_case("for"))
                .map(|(_, v)| v.trim().trim_matches('"').to_owned())?
        }
        None => last("x-forwarded-for")?.rsplit(',').next().unwrap_or_default().trim().to_owned(),
    };
    parse_node(&node)
}

/// An address of `Forwarded`'s node syntax, or `X-Forwarded-For`'s: `1.2.3.4`, `1.2.3.4:80`, `[::1]`, `[::1]:80`,
/// `::1`.
fn parse_node(node: &str) -> Option<std::net::IpAddr> {
    if let Ok(ip) = node.parse() {
        return Some(ip);
    }
    if let Some(rest) = node.strip_prefix('[') {
        return rest.split(']').next()?.parse().ok();
    }
    node.rsplit_once(':').and_then(|(host, _)| host.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forwarded_client_is_the_last_one_the_nearest_proxy_named() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.append(*k, v.parse().unwrap());
            }
            h
        };
        let ip = |s: &str| Some(s.parse::<std::net::IpAddr>().unwrap());
        assert_eq!(forwarded_for(&headers(&[("x-forwarded-for", "203.0.113.7")])), ip("203.0.113.7"));
        assert_eq!(forwarded_for(&headers(&[("x-forwarded-for", "10.0.0.1, 198.51.100.2")])), ip("198.51.100.2"));
        assert_eq!(
            forwarded_for(&headers(&[("forwarded", "for=192.0.2.60;proto=http, for=\"[2001:db8::17]:4711\"")])),
            ip("2001:db8::17")
        );
        assert_eq!(forwarded_for(&headers(&[("forwarded", "for=192.0.2.43:8080")])), ip("192.0.2.43"));
        // Forwarded wins over X-Forwarded-For; names that are no address leave the socket's peer.
        let both = headers(&[("x-forwarded-for", "198.51.100.9"), ("forwarded", "for=192.0.2.1")]);
        assert_eq!(forwarded_for(&both), ip("192.0.2.1"));
        assert_eq!(forwarded_for(&headers(&[("forwarded", "for=_hidden")])), None);
        assert_eq!(forwarded_for(&headers(&[("x-forwarded-for", "unknown")])), None);
        assert_eq!(forwarded_for(&HeaderMap::new()), None);
    }

    #[test]
    fn only_real_loopback_names_and_addresses_are_loopback() {
        for host in [
            "localhost",
            "LOCALHOST",
            "LocalHost:8080",
            "127.0.0.1",
            "127.0.0.1:3000",
            "127.1.2.3:80",
            "[::1]",
            "[::1]:8000",
        ] {
            assert!(is_loopback_host(host), "{host} is loopback");
        }
        for host in [
            "127.evil.com",
            "127.0.0.1.attacker.example",
            "127.0.0.1.attacker.example:80",
            "localhost.evil.com",
            "evil.com",
            "[::2]:80",
            "0.0.0.0",
            "",
            "127.0.0.1@evil.com",
        ] {
            assert!(!is_loopback_host(host), "{host} is not loopback");
        }
    }
}
