//! The server's authorization at work: a request's token (and DPoP proof) checked, and the refusal answered with
//! its challenge (`WWW-Authenticate`) when it is not good.

#[cfg(feature = "http")]
use std::collections::BTreeSet;
use std::sync::Arc;

#[cfg(feature = "http")]
use serde_json::{json, Value};

#[cfg(feature = "auth")]
use super::algorithms;
#[cfg(feature = "http")]
use super::{AuthInfo, Dpop, TokenError};
use super::{Authorization, TokenVerifier};
/// What a request needs from its token: nothing beyond a valid token, or these scopes.
#[cfg(feature = "http")]
pub(crate) type Needed = &'static [&'static str];

/// A server's authorization, ready to check requests.
pub(crate) struct Guard {
    pub config: Authorization,
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // read by the HTTP transport's checks only
    pub(super) verifier: Arc<dyn TokenVerifier>,
    /// Where the metadata is served on this host (`/.well-known/oauth-protected-resource/mcp`).
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // read by the HTTP transport's checks only
    pub metadata_path: String,
    /// The same, absolute: what challenges point at.
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // read by the HTTP transport's checks only
    pub metadata_url: String,
    /// The checker of DPoP proofs, unless DPoP is off.
    #[cfg_attr(not(feature = "http"), allow(dead_code))] // read by the HTTP transport's checks only
    pub(super) proofs: Option<Proofs>,
}

#[cfg(feature = "auth")]
use super::dpop::{ProofError, Proofs};

/// Without the `auth` feature no proof is checked (DPoP is off).
#[cfg(not(feature = "auth"))]
pub(super) enum Proofs {}

/// The errors of a proof check, which no `Proofs` can make without the `auth` feature.
#[cfg(all(feature = "http", not(feature = "auth")))]
#[allow(dead_code)]
enum ProofError {
    Invalid(String),
    Binding,
    Full,
}

#[cfg(all(feature = "http", not(feature = "auth")))]
impl Proofs {
    fn check(&self, _: &str, _: &str, _: &str, _: &str, _: &str) -> Result<(), ProofError> {
        match *self {}
    }
}

/// The algorithms proofs may be signed with.
#[cfg(feature = "auth")]
const DPOP_ALGORITHMS: &[&str] = algorithms::ALGORITHM_NAMES;
#[cfg(all(feature = "http", not(feature = "auth")))]
const DPOP_ALGORITHMS: &[&str] = &[];

/// The request a token and its DPoP proof are checked for.
#[cfg(feature = "http")]
pub(crate) struct Request<'a> {
    /// Its method (`POST`), what a proof's `htm` must be.
    pub method: &'a str,
    /// Its path on this host, what a proof's `htu` must end in (or the resource's path).
    pub path: &'a str,
    /// Its query string, where no access token may be.
    pub query: Option<&'a str>,
}

/// What a request's `DPoP` headers held.
#[cfg(feature = "http")]
pub(crate) enum ProofHeader<'a> {
    /// None.
    Missing,
    /// One, its value.
    One(&'a [u8]),
    /// More than one, which RFC 9449 §4.3 refuses.
    Many,
}

/// The scheme a challenge or refusal is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg(feature = "http")]
pub(crate) enum Scheme {
    Bearer,
    Dpop,
}

/// What a request's `Authorization` header said.
#[cfg(feature = "http")]
pub(crate) enum Presented<'a> {
    /// No `Authorization` header.
    Nothing,
    /// `Bearer <token>`.
    Bearer(&'a str),
    /// `DPoP <token>` (RFC 9449 §7.1).
    Dpop(&'a str),
    /// Something else: another scheme, or a malformed value.
    Malformed,
}

#[cfg(feature = "http")]
impl Presented<'_> {
    pub(crate) fn of(header: Option<&[u8]>) -> Presented<'_> {
        let Some(value) = header else { return Presented::Nothing };
        let Ok(value) = std::str::from_utf8(value) else { return Presented::Malformed };
        let (bearer, token) = match value.split_once(' ') {
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => (true, token.trim()),
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("dpop") => (false, token.trim()),
            _ => return Presented::Malformed,
        };
        // Every byte checked without an early exit, which the compiler turns into a few vector compares.
        let valid = !token.is_empty() && token.bytes().fold(true, |all, b| all & is_token68(b));
        match (valid, bearer) {
            (false, _) => Presented::Malformed,
            (true, true) => Presented::Bearer(token),
            (true, false) => Presented::Dpop(token),
        }
    }
}

/// Whether `b` may be in a `token68` (RFC 7235 §2.1), the form of a bearer token (RFC 6750 §2.1).
#[cfg(feature = "http")]
fn is_token68(b: u8) -> bool {
    b.is_ascii_alphanumeric() | matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

/// Why a request is refused, as the transport answers it.
#[derive(Debug, PartialEq)]
#[cfg(feature = "http")]
pub(crate) enum Refusal {
    /// `401`: no token, or one that is not valid; `on` is the scheme whose challenge carries the error.
    Unauthorized { error: Option<(&'static str, String)>, scopes: Vec<String>, on: Scheme },
    /// `403 insufficient_scope`: the token is valid but lacks scopes the handler needs; `on` is the scheme it was
    /// presented with.
    InsufficientScope { scopes: Vec<String>, missing: Vec<String>, on: Scheme },
    /// `503`: the token could not be checked now.
    Unavailable(String),
}

#[cfg(feature = "http")]
impl Refusal {
    /// The value of the `WWW-Authenticate` header, for the two refusals that have one: a `Bearer` challenge, a
    /// `DPoP` one (with `algs`, RFC 9449 §7.1), or both in one value, as the server takes them; the error goes on
    /// the challenge of the scheme it concerns.
    pub(crate) fn challenge(&self, guard: &Guard) -> Option<String> {
        let (scopes, error, on, only_on) = match self {
            Refusal::Unauthorized { error, scopes, on } => {
                (scopes, error.as_ref().map(|(code, why)| (*code, why.clone())), *on, false)
            }
            Refusal::InsufficientScope { scopes, missing, on } => {
                let why = format!("this request needs the scope(s) {}", missing.join(" "));
                (scopes, Some(("insufficient_scope", why)), *on, true)
            }
            Refusal::Unavailable(_) => return None,
        };
        let offered: &[Scheme] = match (guard.dpop(), only_on) {
            (_, true) => &[on],
            (Dpop::Off, false) => &[Scheme::Bearer],
            (Dpop::Accepted, false) => &[Scheme::Bearer, Scheme::Dpop],
            (Dpop::Required, false) => &[Scheme::Dpop],
        };
        // An error of a scheme not offered (a malformed header, a token in the query, where DPoP is required) goes
        // on the challenge that is.
        let on = if offered.contains(&on) { on } else { offered[0] };
        let one = |scheme: Scheme| {
            let mut parts = vec![format!("resource_metadata=\"{}\"", guard.metadata_url)];
            if !scopes.is_empty() {
                parts.push(format!("scope=\"{}\"", scopes.join(" ")));
            }
            if let Some((code, description)) = error.as_ref().filter(|_| scheme == on) {
                parts.push(format!("error=\"{code}\""));
                parts.push(format!("error_description=\"{}\"", quoted(description)));
            }
            match scheme {
                Scheme::Bearer => format!("Bearer {}", parts.join(", ")),
                Scheme::Dpop => {
                    parts.push(format!("algs=\"{}\"", DPOP_ALGORITHMS.join(" ")));
                    format!("DPoP {}", parts.join(", "))
                }
            }
        };
        Some(offered.iter().map(|s| one(*s)).collect::<Vec<_>>().join(", "))
    }

    /// A sentence for the body and the log.
    pub(crate) fn message(&self) -> String {
        match self {
            Refusal::Unauthorized { error: None, .. } => {
                "unauthorized: this server needs an OAuth access token (Authorization: Bearer ..., or DPoP ... with a \
                 DPoP proof where the server takes DPoP); the WWW-Authenticate header names its metadata"
                    .into()
            }
            Refusal::Unauthorized { error: Some((_, why)), .. } => format!("unauthorized: {why}"),
            Refusal::InsufficientScope { missing, .. } => {
                format!("forbidden: the access token lacks the scope(s) {} that this request needs", missing.join(" "))
            }
            Refusal::Unavailable(why) => format!("the access token could not be verified now: {why}"),
        }
    }
}

/// A challenge's quoted-string: `"` and `\` escaped, control characters dropped.
#[cfg(feature = "http")]
fn quoted(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control())
        .flat_map(|c| match c {
            '"' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect()
}

#[cfg(feature = "http")]
impl Guard {
    /// The principal of a request, from its `Authorization` header (and, for the `DPoP` scheme, the proof that
    /// `proof` reads from its `DPoP` header, read only then); `needed` are the scopes of what it asks for (none
    /// known for GET and DELETE).
    pub(crate) async fn admit<'a>(
        &self,
        header: Option<&[u8]>,
        proof: impl FnOnce() -> ProofHeader<'a>,
        request: Request<'_>,
        needed: &[&str],
    ) -> Result<Arc<AuthInfo>, Refusal> {
        if let Some(refusal) = Guard::token_in_query(request.query) {
            return Err(refusal);
        }
        let (token, on) = self.presented(header, needed)?;
        let auth = match self.verifier.verify_shared(token).await {
            Ok(auth) => auth,
            Err(TokenError::Invalid(why)) => {
                tracing::debug!(reason = %why, "refused an access token");
                return Err(self.refusal(needed, on, "invalid_token", why));
            }
            Err(TokenError::Unavailable(why)) => {
                tracing::warn!(reason = %why, "could not verify an access token");
                return Err(Refusal::Unavailable(why));
            }
        };
        self.check_binding(&auth, (token, on), proof, &request, needed)?;
        self.check_scopes(&auth, needed, on)?;
        Ok(auth)
    }

    /// A refusal that asks for a token again, on scheme `on`, with the scopes of what the request asks for.
    fn refusal(&self, needed: &[&str], on: Scheme, code: &'static str, why: String) -> Refusal {
        Refusal::Unauthorized { error: Some((code, why)), scopes: self.challenge_scopes(needed), on }
    }

    /// The scopes a challenge names: those of what the request asks for, else the ones a client starts with.
    fn challenge_scopes(&self, needed: &[&str]) -> Vec<String> {
        match needed {
            [] => self.config.initial_scopes.clone(),
            needed => needed.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    /// The access token the `Authorization` header presents, and its scheme, if this server takes that scheme.
    fn presented<'h>(&self, header: Option<&'h [u8]>, needed: &[&str]) -> Result<(&'h str, Scheme), Refusal> {
        let dpop = self.dpop();
        let refuse = |on: Scheme, code: &'static str, why: &str| Err(self.refusal(needed, on, code, why.into()));
        match Presented::of(header) {
            Presented::Nothing => {
                let on = if dpop == Dpop::Required { Scheme::Dpop } else { Scheme::Bearer };
                Err(Refusal::Unauthorized { error: None, scopes: self.challenge_scopes(needed), on })
            }
            Presented::Malformed => {
                let why = match dpop {
                    Dpop::Off => "the Authorization header must be `Bearer <access token>`",
                    Dpop::Accepted => {
                        "the Authorization header must be `Bearer <access token>` or `DPoP <access token>`"
                    }
                    Dpop::Required => "the Authorization header must be `DPoP <access token>`, with a DPoP proof",
                };
                refuse(Scheme::Bearer, "invalid_request", why)
            }
            Presented::Bearer(_) if dpop == Dpop::Required => {
                let why = "this server takes DPoP-bound access tokens only (Authorization: DPoP, with a DPoP proof)";
                refuse(Scheme::Dpop, "invalid_token", why)
            }
            Presented::Dpop(_) if dpop == Dpop::Off => {
                let why = "this server takes bearer tokens only (Authorization: Bearer); ask for a bearer token";
                refuse(Scheme::Bearer, "invalid_request", why)
            }
            Presented::Bearer(token) => Ok((token, Scheme::Bearer)),
            Presented::Dpop(token) => Ok((token, Scheme::Dpop)),
        }
    }

    /// A token bound to a key (RFC 9449 §6, RFC 7800 `cnf`) is only good with a proof of that key: taken as a
    /// bearer token it would let anyone who copied it use it. A DPoP token must be bound, and come with its proof.
    fn check_binding<'a>(
        &self,
        auth: &AuthInfo,
        (token, on): (&str, Scheme),
        proof: impl FnOnce() -> ProofHeader<'a>,
        request: &Request<'_>,
        needed: &[&str],
    ) -> Result<(), Refusal> {
        let refuse = |on: Scheme, code: &'static str, why: &str| Err(self.refusal(needed, on, code, why.into()));
        let jkt = auth.claims.get("cnf").and_then(|cnf| cnf.get("jkt"));
        let jkt = match (on, jkt) {
            (Scheme::Bearer, None) => return Ok(()),
            (Scheme::Bearer, Some(_)) => {
                let why = "it is bound to a DPoP key (cnf.jkt): send it as `Authorization: DPoP` with a DPoP proof";
                return refuse(Scheme::Bearer, "invalid_token", why);
            }
            (Scheme::Dpop, None) => {
                let why = "it is not bound to a DPoP key (no cnf.jkt): send it as `Authorization: Bearer`";
                return refuse(Scheme::Dpop, "invalid_token", why);
            }
            (Scheme::Dpop, Some(jkt)) => jkt,
        };
        let Some(jkt) = jkt.as_str() else {
            return refuse(Scheme::Dpop, "invalid_token", "its cnf.jkt is not a string");
        };
        let Some(proofs) = &self.proofs else {
            return refuse(Scheme::Dpop, "invalid_token", "this server checks no DPoP proof");
        };
        let proof = match proof() {
            ProofHeader::One(value) => std::str::from_utf8(value).unwrap_or_default(),
            ProofHeader::Missing => {
                let why = "a DPoP-bound token needs a DPoP proof in the `DPoP` header";
                return refuse(Scheme::Dpop, "invalid_dpop_proof", why);
            }
            ProofHeader::Many => {
                return refuse(Scheme::Dpop, "invalid_dpop_proof", "the request has more than one `DPoP` header")
            }
        };
        match proofs.check(proof, request.method, request.path, token, jkt) {
            Ok(()) => Ok(()),
            Err(ProofError::Invalid(why)) => {
                tracing::debug!(reason = %why, "refused a DPoP proof");
                Err(self.refusal(needed, Scheme::Dpop, "invalid_dpop_proof", why))
            }
            Err(ProofError::Binding) => {
                tracing::debug!("refused a DPoP proof of another key than the token's");
                let why = "Invalid DPoP key binding: the proof's key is not the one the token is bound to";
                refuse(Scheme::Dpop, "invalid_token", why)
            }
            Err(ProofError::Full) => {
                tracing::warn!("too many DPoP proofs within one window to remember their jti");
                Err(Refusal::Unavailable("too many DPoP proofs at once; try again".into()))
            }
        }
    }

    /// Whether DPoP is off, accepted or required (off without the checker).
    pub(crate) fn dpop(&self) -> Dpop {
        if self.proofs.is_some() {
            self.config.dpop
        } else {
            Dpop::Off
        }
    }

    /// The refusal of a request that carries an access token in its query string (RFC 6750 §2.3, which OAuth 2.1
    /// drops): checked before anything else.
    pub(crate) fn token_in_query(query: Option<&str>) -> Option<Refusal> {
        let in_query = query.is_some_and(|q| q.split('&').any(|pair| pair.split('=').next() == Some("access_token")));
        in_query.then(|| Refusal::Unauthorized {
            error: Some((
                "invalid_request",
                "an access token in the query string is refused; send it in the Authorization header".into(),
            )),
            scopes: Vec::new(),
            on: Scheme::Bearer,
        })
    }

    /// `403` unless `auth` grants every scope in `needed`.
    pub(crate) fn check_scopes(&self, auth: &AuthInfo, needed: &[&str], on: Scheme) -> Result<(), Refusal> {
        let missing: Vec<String> = needed.iter().filter(|s| !auth.has_scope(s)).map(|s| (*s).to_owned()).collect();
        if missing.is_empty() {
            return Ok(());
        }
        Err(Refusal::InsufficientScope { scopes: needed.iter().map(|s| (*s).to_owned()).collect(), missing, on })
    }

    /// The Protected Resource Metadata (RFC 9728), with every scope in `required` (what the handlers need).
    pub(crate) fn metadata(&self, required: BTreeSet<&str>, server_name: &str) -> Value {
        let mut scopes: BTreeSet<&str> = required;
        scopes.extend(self.config.scopes.iter().map(String::as_str));
        scopes.extend(self.config.initial_scopes.iter().map(String::as_str));
        let mut metadata = json!({
            "resource": self.config.resource,
            "authorization_servers": self.config.authorization_servers,
            "scopes_supported": scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": self.config.resource_name.as_deref().unwrap_or(server_name),
        });
        if self.dpop() != Dpop::Off {
            metadata["dpop_signing_alg_values_supported"] = json!(DPOP_ALGORITHMS);
            metadata["dpop_bound_access_tokens_required"] = json!(self.dpop() == Dpop::Required);
        }
        metadata
    }
}

/// What every server with an authorization answers, whatever its transport.
impl Guard {
    /// Whether lists leave out what the caller cannot use.
    pub(crate) fn hides_unauthorized(&self) -> bool {
        self.config.hide_unauthorized
    }
}

#[cfg(all(test, feature = "http"))]
mod tests {
    use super::*;
    use crate::base::future::BoxFuture;

    #[test]
    fn only_a_well_formed_bearer_header_presents_a_token() {
        assert!(matches!(Presented::of(None), Presented::Nothing));
        assert!(matches!(Presented::of(Some(b"Bearer abc.def-ghi")), Presented::Bearer("abc.def-ghi")));
        assert!(matches!(Presented::of(Some(b"bearer abc")), Presented::Bearer("abc")));
        assert!(matches!(Presented::of(Some(b"DPoP abc.def")), Presented::Dpop("abc.def")));
        assert!(matches!(Presented::of(Some(b"dpop abc")), Presented::Dpop("abc")));
        assert!(matches!(Presented::of(Some(b"Basic dXNlcjpwYXNz")), Presented::Malformed));
        assert!(matches!(Presented::of(Some(b"Bearer ")), Presented::Malformed));
        assert!(matches!(Presented::of(Some(b"Bearer a\"b")), Presented::Malformed));
    }

    #[test]
    fn challenges_offer_the_schemes_taken_and_put_the_error_on_one_offered() {
        struct Nobody;
        impl TokenVerifier for Nobody {
            fn verify<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<AuthInfo, TokenError>> {
                Box::pin(async { Err(TokenError::Invalid("no".into())) })
            }
        }
        let guard = |dpop| {
            let auth = Authorization::new("https://books.example.com/mcp").authorization_server("https://as");
            auth.verifier(Nobody).dpop(dpop).build().unwrap()
        };
        let malformed = Refusal::Unauthorized {
            error: Some(("invalid_request", "bad".into())),
            scopes: vec!["a".into()],
            on: Scheme::Bearer,
        };
        let metadata = "resource_metadata=\"https://books.example.com/.well-known/oauth-protected-resource/mcp\"";
        assert_eq!(
            malformed.challenge(&guard(Dpop::Off)).unwrap(),
            format!("Bearer {metadata}, scope=\"a\", error=\"invalid_request\", error_description=\"bad\"")
        );
        #[cfg(feature = "auth")]
        {
            let required = malformed.challenge(&guard(Dpop::Required)).unwrap();
            assert!(required.starts_with("DPoP ") && required.contains("error=\"invalid_request\""), "{required}");
            assert!(!required.contains("Bearer"), "{required}");
            let accepted = malformed.challenge(&guard(Dpop::Accepted)).unwrap();
            let (bearer, dpop) = accepted.split_once(", DPoP ").unwrap();
            assert!(
                bearer.contains("error=") && !dpop.contains("error=") && dpop.contains("algs=\"ES256"),
                "{accepted}"
            );
        }
    }

    #[test]
    fn challenges_quote_their_descriptions() {
        assert_eq!(quoted("a \"b\" \\ c\n"), "a \\\"b\\\" \\\\ c");
    }
}
