//! Who made a release: cosign keyed signatures, as pure functions. `keys` (P-256 public keys
//! from PEM with their fingerprint; private keys from cosign's encrypted file — `sealed` — or
//! PKCS#8), `cosign` (the `sha256-<hex>.sig` tag, the simple-signing payload, the signature
//! manifest), `policy` (a release's signatures against the trusted keys: `Verified` with the
//! signer, or a `Refusal` naming the reason). Reading and writing signatures in a registry, and
//! recording a verified release in the cache, is [`crate::oci::signature`]. `provenance`: Helm's
//! `.prov` files of chart dependencies against an OpenPGP keyring.

pub mod cosign;
pub mod keys;
pub mod policy;
pub mod provenance;
pub mod sealed;

pub use keys::{KeyError, PublicKey, SigningKey};
pub use policy::{Policy, Refusal, Verified};
