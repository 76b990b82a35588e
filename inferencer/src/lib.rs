//! Scalpel analysis library.
