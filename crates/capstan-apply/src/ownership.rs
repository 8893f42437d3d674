//! Whose an object is: every object an apply with an inventory writes carries that inventory's
//! id (`capstan.dev/inventory`). An object already marked with *another* inventory belongs to
//! another owner (two Clusters whose kubeconfigs name one API server, a copied Secret): an
//! apply that took it over silently would make the two owners take it from each other on
//! every pass, each seeing the other's write as drift. So it is left alone and reported as a
//! conflict, unless the apply is told to take over ([`crate::ApplyOptions::take_over`], like
//! `kubectl apply --force-conflicts` for fields). The decision is pure; the applier reads
//! the mark from its listing of the live objects.

/// What an apply does with an object whose live copy exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Unmarked, or marked with this apply's inventory: applied as usual.
    Apply,
    /// Marked with another inventory, and taking over was asked for: applied, and the mark
    /// becomes this apply's.
    TakeOver { owner: String },
    /// Marked with another inventory: not applied, reported.
    Conflict { owner: String },
}

/// The claim of an apply with inventory `ours` (`namespace/name`; `None`: an apply without an
/// inventory) on an object whose live copy is marked `marked` (its inventory annotation).
pub fn claim(ours: Option<&str>, marked: Option<&str>, take_over: bool) -> Claim {
    match marked.map(str::trim).filter(|m| !m.is_empty()) {
        None => Claim::Apply,
        Some(owner) if Some(owner) == ours => Claim::Apply,
        Some(owner) if take_over => Claim::TakeOver {
            owner: owner.to_string(),
        },
        Some(owner) => Claim::Conflict {
            owner: owner.to_string(),
        },
    }
}

/// The result message of an object left to `owner`.
pub fn conflict_message(owner: &str) -> String {
    format!("owned by inventory {owner}; not taken over")
}

/// The inventory named in a [`conflict_message`].
pub fn owner_in_message(message: &str) -> Option<&str> {
    message.strip_prefix("owned by inventory ")?.split(';').next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims() {
        let conflict = |owner: &str| Claim::Conflict { owner: owner.into() };
        let take = |owner: &str| Claim::TakeOver { owner: owner.into() };
        type Row<'a> = (Option<&'a str>, Option<&'a str>, bool, Claim);
        let table: &[Row] = &[
            // Nobody's, or ours: applied.
            (Some("ns/a"), None, false, Claim::Apply),
            (Some("ns/a"), Some(""), false, Claim::Apply),
            (Some("ns/a"), Some("ns/a"), false, Claim::Apply),
            (Some("ns/a"), Some("ns/a"), true, Claim::Apply),
            // Another inventory's: left alone unless taking over is asked for.
            (Some("ns/a"), Some("ns/b"), false, conflict("ns/b")),
            (Some("ns/a"), Some("ns/b"), true, take("ns/b")),
            (Some("ns/a"), Some("other/a"), false, conflict("other/a")),
            // An apply without an inventory owns nothing.
            (None, Some("ns/b"), false, conflict("ns/b")),
            (None, Some("ns/b"), true, take("ns/b")),
            (None, None, false, Claim::Apply),
        ];
        for (i, (ours, marked, take_over, want)) in table.iter().enumerate() {
            assert_eq!(&claim(*ours, *marked, *take_over), want, "row {i}");
        }
    }

    #[test]
    fn the_message_names_the_owner() {
        let message = conflict_message("kube-system/capstan.caddon.c1");
        assert_eq!(owner_in_message(&message), Some("kube-system/capstan.caddon.c1"));
        assert_eq!(owner_in_message("field conflict"), None);
    }
}
