//! What a conversion reports: a field dropped as Cluster API drops it, a field refused.

/// A `v1beta1` field `v1beta2` no longer has, dropped as Cluster API's own conversion drops
/// it (it takes the value from the Cluster, or the field had no effect).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// Its dotted path in the `v1beta1` object.
    pub field: String,
    pub why: &'static str,
}

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} dropped: {}", self.field, self.why)
    }
}

/// A `v1beta1` object that cannot be converted without losing something.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{object}: field {field}: {refusal}")]
pub struct ConversionError {
    /// `Kind name`.
    pub object: String,
    /// The dotted path of the field (in the `v1beta1` object; for [`Refusal::Unknown`], in the
    /// converted one, the same path where the conversion passes a field through).
    pub field: String,
    pub refusal: Refusal,
}

/// Why a field is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// Neither the conversion nor the `v1beta2` schema knows the field: the API server would
    /// prune it.
    #[error("not a field of {kind} v1beta2 (the API server would prune it)")]
    Unknown { kind: String },
    /// The field's value is not of the type `v1beta1` declares.
    #[error("{0}")]
    Invalid(String),
    /// The value cannot be said in `v1beta2`.
    #[error("no v1beta2 equivalent: {0}")]
    NoEquivalent(String),
}
