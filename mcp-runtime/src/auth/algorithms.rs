//! The one allow-list of signature algorithms, for access tokens and DPoP proofs alike: asymmetric ones only, never
//! `none` and never an HMAC one (whose "key" would be the issuer's public key, which anyone has).

use jsonwebtoken::Algorithm;

/// The algorithms a token or a proof may be signed with, in the order a challenge offers them.
pub(crate) const ALGORITHMS: &[Algorithm] = &[
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::EdDSA,
];

/// The same, as the `algs` of a challenge and `dpop_signing_alg_values_supported` name them.
pub(crate) const ALGORITHM_NAMES: &[&str] =
    &["ES256", "ES384", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_are_the_algorithms_and_hmac_and_none_are_not_among_them() {
        assert_eq!(ALGORITHMS.len(), ALGORITHM_NAMES.len());
        for (alg, name) in ALGORITHMS.iter().zip(ALGORITHM_NAMES) {
            assert_eq!(&format!("{alg:?}"), name);
        }
        assert!(!ALGORITHMS.iter().any(|a| matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)));
        assert!(!ALGORITHM_NAMES.iter().any(|a| a.starts_with("HS") || *a == "none"));
    }
}
