//! `.helmignore` rules (placeholder).
