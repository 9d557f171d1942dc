//! The optional sections that follow the buffer table, in wire order:
//! quantization, shard, statistics, extension type, composite member
//! (`docs/spec/metadata.md` § Overall Descriptor Structure). Each file holds
//! its field map, checks and encoder.

pub(crate) mod ext_type;
pub(crate) mod member;
pub(crate) mod quantization;
pub(crate) mod shard;
pub(crate) mod statistics;
