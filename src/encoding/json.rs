//! Go `encoding/json` semantics (placeholder; filled by the encoders work).
