//! A transparency log's inclusion proof, checked offline: the entry's leaf hash, hashed up its
//! audit path (RFC 6962 / RFC 9162 §2.1.3.2), must give the root hash of a tree of the proof's
//! size, and that root must be the one the log signed in its checkpoint — a signed note
//! (`ORIGIN\nSIZE\nBASE64 ROOT\n…\n\n— NAME BASE64(KEY ID ‖ SIGNATURE)\n`, C2SP signed-note and
//! tlog-checkpoint), the signature over the text before the blank line. Rekor v1's checkpoints
//! carry the time the log signed them (`Timestamp: <ns>`): the entry was logged by then.
//! Rekor v2's carry no time (a bundle's RFC 3161 timestamp gives it) and are signed with
//! Ed25519, often beside witnesses' cosignatures.

use aws_lc_rs::signature::{ED25519, UnparsedPublicKey};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sha2::{Digest, Sha256};

use super::rekor::log_signed;
use super::trusted_root::LogKey;

/// An inclusion proof as a bundle records it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InclusionProof {
    pub log_index: u64,
    pub tree_size: u64,
    pub root_hash: Vec<u8>,
    pub hashes: Vec<Vec<u8>>,
    /// The signed note, verbatim.
    pub checkpoint: String,
}

fn leaf_hash(leaf: &[u8]) -> Vec<u8> {
    Sha256::new()
        .chain_update([0u8])
        .chain_update(leaf)
        .finalize()
        .to_vec()
}

fn node_hash(left: &[u8], right: &[u8]) -> Vec<u8> {
    Sha256::new()
        .chain_update([1u8])
        .chain_update(left)
        .chain_update(right)
        .finalize()
        .to_vec()
}

/// The root hash that `path` proves for the leaf `leaf` at `index` of a tree of `size` leaves.
pub fn root_from_path(index: u64, size: u64, leaf: &[u8], path: &[Vec<u8>]) -> Result<Vec<u8>, String> {
    if index >= size {
        return Err(format!("leaf {index} is outside a tree of {size} leaves"));
    }
    let (mut f, mut s) = (index, size - 1);
    let mut hash = leaf_hash(leaf);
    for sibling in path {
        if s == 0 {
            return Err(format!(
                "the audit path has more than the {} hashes a tree of {size} needs",
                path.len() - 1
            ));
        }
        if f & 1 == 1 || f == s {
            hash = node_hash(sibling, &hash);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            hash = node_hash(&hash, sibling);
        }
        f >>= 1;
        s >>= 1;
    }
    if s != 0 {
        return Err(format!(
            "the audit path has too few hashes ({}) for a tree of {size}",
            path.len()
        ));
    }
    Ok(hash)
}

/// Checks that the entry `body` (the canonical bytes) is in the log `log` by `proof`: the path
/// gives the proof's root, and the checkpoint the log signed names that root and size. The
/// checkpoint's signed time (Unix seconds), when it has one.
pub fn check(log: &LogKey, body: &[u8], proof: &InclusionProof) -> Result<Option<i64>, String> {
    let root = root_from_path(proof.log_index, proof.tree_size, body, &proof.hashes)?;
    if root != proof.root_hash {
        return Err(format!(
            "the audit path of leaf {} gives another root hash than the proof's",
            proof.log_index
        ));
    }
    let (size, signed_root, time) = check_checkpoint(log, &proof.checkpoint)?;
    if size != proof.tree_size || signed_root != proof.root_hash {
        return Err(format!(
            "the checkpoint is of a tree of {size} leaves with another root, not the proof's {}",
            proof.tree_size
        ));
    }
    Ok(time)
}

/// Whether `signature` of a checkpoint's text verifies under the log's key: Ed25519 (Rekor v2)
/// or ECDSA (Rekor v1).
fn note_signed(log: &LogKey, text: &[u8], signature: &[u8]) -> bool {
    match log.ed25519() {
        Some(key) => UnparsedPublicKey::new(&ED25519, key)
            .verify(text, signature)
            .is_ok(),
        None => log_signed(log, text, signature),
    }
}

/// The tree size, root hash and time of a checkpoint signed by `log`. The note (C2SP
/// signed-note) is its text, a blank line and signature lines `— NAME BASE64(KEY ID ‖
/// SIGNATURE)`; the log's line is the one with its key name and key id
/// ([`LogKey::note_key_id`]) and must verify. Lines of other keys (witnesses' cosignatures,
/// another key of the same name) are ignored. The text is the origin (the key name, or for
/// Rekor v1 `NAME - TREE ID`), the tree size, the base64 root hash and optional lines such as
/// Rekor v1's `Timestamp: <ns>`.
fn check_checkpoint(log: &LogKey, note: &str) -> Result<(u64, Vec<u8>, Option<i64>), String> {
    let (text, signatures) = note
        .rsplit_once("\n\n")
        .ok_or("the checkpoint is not a signed note (no blank line)")?;
    let text = format!("{text}\n");
    let mut lines = text.lines();
    let name = log.key_name();
    let origin = lines.next().unwrap_or_default();
    if origin != name && !origin.starts_with(&format!("{name} - ")) {
        return Err(format!(
            "the checkpoint's origin is {origin:?}, not the log {name}"
        ));
    }
    let size: u64 = lines
        .next()
        .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse().ok())
        .ok_or("the checkpoint has no tree size")?;
    let root = lines
        .next()
        .and_then(|r| STANDARD.decode(r).ok())
        .filter(|r| r.len() == 32)
        .ok_or("the checkpoint has no base64 SHA-256 root hash")?;
    let time = lines
        .filter_map(|l| l.strip_prefix("Timestamp: "))
        .find_map(|ns| ns.trim().parse::<i64>().ok())
        .map(|ns| ns / 1_000_000_000);
    let key_id = log.note_key_id();
    let mut signed = false;
    for line in signatures.lines() {
        let (signer, sig) = line
            .strip_prefix("\u{2014} ")
            .and_then(|rest| rest.split_once(' '))
            .ok_or_else(|| format!("the checkpoint has a malformed signature line {line:?}"))?;
        let sig = STANDARD
            .decode(sig)
            .map_err(|e| format!("the checkpoint's signature by {signer} is not base64: {e}"))?;
        if signer != name || sig.len() <= 4 || sig[..4] != key_id {
            continue;
        }
        if !note_signed(log, text.as_bytes(), &sig[4..]) {
            return Err(format!(
                "the checkpoint's signature by {name} does not verify under the key of {}",
                log.base_url
            ));
        }
        signed = true;
    }
    if !signed {
        return Err(format!(
            "the checkpoint is not signed by the key of {} (no signature line of {name} with key id {})",
            log.base_url,
            crate::cache::hex(&key_id)
        ));
    }
    Ok((size, root, time))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The root of leaves by RFC 6962's definition, to check paths against.
    fn tree_root(leaves: &[Vec<u8>]) -> Vec<u8> {
        if leaves.len() == 1 {
            return leaf_hash(&leaves[0]);
        }
        let k = leaves.len().next_power_of_two() / 2;
        node_hash(&tree_root(&leaves[..k]), &tree_root(&leaves[k..]))
    }

    /// The audit path of leaf `m` by RFC 6962's definition.
    fn path(m: usize, leaves: &[Vec<u8>]) -> Vec<Vec<u8>> {
        if leaves.len() == 1 {
            return Vec::new();
        }
        let k = leaves.len().next_power_of_two() / 2;
        if m < k {
            let mut p = path(m, &leaves[..k]);
            p.push(tree_root(&leaves[k..]));
            p
        } else {
            let mut p = path(m - k, &leaves[k..]);
            p.push(tree_root(&leaves[..k]));
            p
        }
    }

    /// A checkpoint the public-good Rekor v2 log signed (tree size 34,356,369, July 2026), as
    /// the log publishes it; its signature was checked independently with Python's
    /// `cryptography` under the Ed25519 key of the shipped root.
    const PUBLIC_GOOD_V2: &str = "log2025-1.rekor.sigstore.dev\n34356369\ndA9mMr0smTXgo7nGsE01Zdc5KOOqTs2/zYfdSqxO+ks=\n\n\u{2014} log2025-1.rekor.sigstore.dev zxGZFQZgTebN28s0D7vKP5gX8R+CsXCved700HCQAHgDHbdkaH3tfx7+DMPkccNhzsnSy7LijLzWMa+evZduylLs0wc=\n";

    #[test]
    fn a_real_rekor_v2_checkpoint_verifies_under_the_shipped_root_and_changed_ones_do_not() {
        let root = crate::verify::TrustedRoot::public_good().unwrap();
        let log = root
            .logs
            .iter()
            .find(|l| l.base_url == "https://log2025-1.rekor.sigstore.dev")
            .unwrap();
        let (size, hash, time) = check_checkpoint(log, PUBLIC_GOOD_V2).unwrap();
        assert_eq!((size, hash.len(), time), (34_356_369, 32, None));
        let witness = "\u{2014} witness.example O8PH5AAAAABopO8+4O9uzScQrNEnGdKLYXSPoUjH1Se4n92W+wT/j5Kel/4J2XWE4bEe9bpIVUD6EGOeUDFkSWz/rbDhvVcJ/2OrDw==\n";
        let table = [
            (format!("{PUBLIC_GOOD_V2}{witness}"), Ok(())),
            (
                PUBLIC_GOOD_V2.replacen("\n\n", &format!("\n\n{witness}"), 1),
                Ok(()),
            ),
            (
                PUBLIC_GOOD_V2.replacen("34356369", "34356370", 1),
                Err("does not verify"),
            ),
            (PUBLIC_GOOD_V2.replacen("dA9m", "eA9m", 1), Err("does not verify")),
            (
                PUBLIC_GOOD_V2.replacen("log2025-1.rekor.sigstore.dev", "log2025-2.rekor.sigstore.dev", 1),
                Err("origin is \"log2025-2.rekor.sigstore.dev\""),
            ),
            (
                PUBLIC_GOOD_V2.replacen("\u{2014} log2025-1", "\u{2014} log2025-2", 1),
                Err("no signature line of log2025-1.rekor.sigstore.dev with key id cf119915"),
            ),
            (
                PUBLIC_GOOD_V2.replacen("zxGZ", "zxGa", 1),
                Err("no signature line"),
            ),
            (
                PUBLIC_GOOD_V2.replacen("\u{2014} ", "- ", 1),
                Err("malformed signature line"),
            ),
            (PUBLIC_GOOD_V2.replacen("\n\n", "\n", 1), Err("no blank line")),
        ];
        for (note, want) in table {
            match (check_checkpoint(log, &note), want) {
                (Ok(_), Ok(())) => {}
                (Err(e), Err(text)) => assert!(e.contains(text), "{note:?}: {e}"),
                (got, want) => panic!("{note:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn every_leaf_of_every_small_tree_proves_the_root_and_changed_proofs_do_not() {
        for size in 1..=17usize {
            let leaves: Vec<Vec<u8>> = (0..size).map(|i| format!("entry {i}").into_bytes()).collect();
            let root = tree_root(&leaves);
            for m in 0..size {
                let p = path(m, &leaves);
                let (m64, n64) = (m as u64, size as u64);
                assert_eq!(
                    root_from_path(m64, n64, &leaves[m], &p).unwrap(),
                    root,
                    "{m}/{size}"
                );
                assert_ne!(root_from_path(m64, n64, b"other", &p).unwrap(), root);
                if let Some(first) = p.first() {
                    let mut bad = p.clone();
                    bad[0] = leaf_hash(first);
                    assert_ne!(root_from_path(m64, n64, &leaves[m], &bad).unwrap(), root);
                    assert!(
                        root_from_path(m64, n64, &leaves[m], &p[1..]).is_err(),
                        "short {m}/{size}"
                    );
                }
                let mut long = p.clone();
                long.push(root.clone());
                assert!(
                    root_from_path(m64, n64, &leaves[m], &long).is_err(),
                    "long {m}/{size}"
                );
            }
            assert!(root_from_path(size as u64, size as u64, &leaves[0], &[]).is_err());
        }
    }
}
