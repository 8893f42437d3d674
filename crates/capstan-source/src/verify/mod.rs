//! Who made a release: cosign keyed signatures, as pure functions. `keys` (P-256 public keys
//! from PEM with their fingerprint; private keys from cosign's encrypted file — `sealed` — or
//! PKCS#8), `cosign` (the `sha256-<hex>.sig` tag, the simple-signing payload, the signature
//! manifest), `policy` (a release's signatures against the trusted keys: `Verified` with the
//! signer, or a `Refusal` naming the reason). Reading and writing signatures in a registry, and
//! recording a verified release in the cache, is [`crate::oci::signature`]. Keyless signatures:
//! `trusted_root` (Sigstore's `trusted_root.json`), `rekor` (the bundle's signed entry
//! timestamp, offline), `keyless` (the Fulcio certificate's chain, validity and identity), `sct`
//! (the certificate's signed certificate timestamps under the root's CT logs).
//! Sigstore bundles (cosign v3, kept as OCI referrers): `bundle` (the format and where it is
//! kept), `merkle` (the log's inclusion proof and signed checkpoint, Rekor v1's and v2's),
//! `timestamp` (RFC 3161 signed timestamps under the root's timestamp authorities, over `der`),
//! `bundle_check` (a bundle against the policy, keyed or keyless). `verdict`: every signature and bundle found, the
//! release passed by any one that verifies (below it `policy` and `bundle_check` judge one
//! each). `provenance`: Helm's `.prov` files of chart
//! dependencies against an OpenPGP keyring.

pub mod bundle;
mod bundle_check;
pub mod cosign;
mod der;
pub mod keyless;
pub mod keys;
pub mod merkle;
pub mod policy;
pub mod provenance;
pub mod rekor;
pub mod sct;
pub mod sealed;
pub mod timestamp;
pub mod trusted_root;
pub mod verdict;

pub use keys::{KeyError, PublicKey, SigningKey};
pub use policy::{Identity, Policy, Refusal, Verified};
pub use trusted_root::{TrustedRoot, TrustedRootError};
