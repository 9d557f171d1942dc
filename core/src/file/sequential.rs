//! The sequential (no-seek) reader: see [`SequentialReader`].

/// Events of the sequential reader.
#[derive(Debug)]
pub enum SeqEvent {}

/// A no-seek reader (in progress).
#[derive(Debug)]
pub struct SequentialReader;
