//! The controllers: one file per kind, on top of `stack/`, `source/` and `apply/`.
