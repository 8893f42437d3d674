//! Loading charts from directories and archives (placeholder).
