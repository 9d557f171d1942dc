//! The KV metadata section: model-level key/value pairs
//! (`docs/spec/file-format.md` § KV metadata section).
//!
//! `kv_count: u32`, then per entry `key_length: u16`, `key` (UTF-8, at
//! least one byte), `value_tag: u8` and the value. [`KvSection::parse`]
//! checks every entry (keys, tags, bools, UTF-8 strings, array element
//! tags, exact length) and that keys are unique before it returns; its
//! iterator and [`KvSection::get`] are then infallible.

use zerocopy::FromBytes;
use zerocopy::little_endian::{U16, U32, U64};

use super::error::{FileError, FileErrorKind};

/// Value tags of the KV section.
pub mod tag {
    /// UTF-8 string: `u32` length, then bytes.
    pub const STRING: u8 = 0x01;
    /// `i64` LE.
    pub const INT64: u8 = 0x02;
    /// `u64` LE.
    pub const UINT64: u8 = 0x03;
    /// `f64` LE.
    pub const FLOAT64: u8 = 0x04;
    /// One byte, 0 or 1.
    pub const BOOL: u8 = 0x05;
    /// `u32` length, then opaque bytes.
    pub const BYTES: u8 = 0x06;
    /// Element tag (0x01–0x06), `u32` count, then the elements' payloads.
    pub const ARRAY: u8 = 0x07;
}

/// The default cap on KV entries a reader accepts (their uniqueness check
/// is pairwise, so the cap bounds its cost).
pub const DEFAULT_MAX_KV_ENTRIES: u32 = 1024;

/// One KV value, borrowed from the section (or from the caller, to write).
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum KvValue<'a> {
    /// Tag 0x01.
    String(&'a str),
    /// Tag 0x02.
    Int64(i64),
    /// Tag 0x03.
    Uint64(u64),
    /// Tag 0x04.
    Float64(f64),
    /// Tag 0x05.
    Bool(bool),
    /// Tag 0x06.
    Bytes(&'a [u8]),
    /// Tag 0x07: a homogeneous array of scalars.
    Array(KvArray<'a>),
}

/// A KV array: read from a file (`Encoded`), or a typed slice to write.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum KvArray<'a> {
    /// As it lies in a file, already validated: element tag, count and
    /// the elements' payloads.
    Encoded {
        /// The element tag (0x01–0x06).
        tag: u8,
        /// Number of elements.
        count: u32,
        /// The payloads, back to back.
        bytes: &'a [u8],
    },
    /// Strings.
    String(&'a [&'a str]),
    /// Signed integers.
    Int64(&'a [i64]),
    /// Unsigned integers.
    Uint64(&'a [u64]),
    /// Floats.
    Float64(&'a [f64]),
    /// Bools.
    Bool(&'a [bool]),
    /// Byte sequences.
    Bytes(&'a [&'a [u8]]),
}

/// Each typed kind of value with its tag, written once: [`KvValue::tag`]
/// and [`KvArray`]'s `element_tag`, `len` and `get` are matches over it.
macro_rules! kv_kinds {
    ($($kind:ident = $tag:ident,)*) => {
        impl KvValue<'_> {
            /// The value's wire tag.
            #[must_use]
            pub const fn tag(&self) -> u8 {
                match self {
                    $(Self::$kind(_) => tag::$tag,)*
                    Self::Array(_) => tag::ARRAY,
                }
            }
        }

        impl<'a> KvArray<'a> {
            /// The elements' tag.
            #[must_use]
            pub const fn element_tag(&self) -> u8 {
                match self {
                    Self::Encoded { tag, .. } => *tag,
                    $(Self::$kind(_) => tag::$tag,)*
                }
            }

            /// Number of elements.
            #[must_use]
            pub const fn len(&self) -> usize {
                match self {
                    Self::Encoded { count, .. } => *count as usize,
                    $(Self::$kind(s) => s.len(),)*
                }
            }

            /// The `i`-th element.
            #[must_use]
            pub fn get(&self, i: usize) -> Option<KvValue<'a>> {
                match *self {
                    // Payloads have their own lengths: walk to the `i`-th.
                    Self::Encoded { .. } => self.iter().nth(i),
                    $(Self::$kind(s) => s.get(i).copied().map(KvValue::$kind),)*
                }
            }
        }
    };
}

kv_kinds! {
    String = STRING,
    Int64 = INT64,
    Uint64 = UINT64,
    Float64 = FLOAT64,
    Bool = BOOL,
    Bytes = BYTES,
}

impl<'a> KvArray<'a> {
    /// Whether the array has no element.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements in order.
    #[must_use]
    pub const fn iter(&self) -> KvArrayIter<'a> {
        KvArrayIter {
            array: *self,
            next: 0,
            pos: 0,
        }
    }
}

/// Iterator over a [`KvArray`]'s elements.
#[derive(Debug, Clone)]
pub struct KvArrayIter<'a> {
    array: KvArray<'a>,
    next: usize,
    pos: usize,
}

impl<'a> Iterator for KvArrayIter<'a> {
    type Item = KvValue<'a>;

    fn next(&mut self) -> Option<KvValue<'a>> {
        if self.next >= self.array.len() {
            return None;
        }
        let v = match self.array {
            KvArray::Encoded { tag, bytes, .. } => {
                let (v, next) = read_payload(bytes, self.pos, tag).ok()?;
                self.pos = next;
                v
            }
            other => other.get(self.next)?,
        };
        self.next = self.next.saturating_add(1);
        Some(v)
    }
}

/// A validated KV section.
///
/// ```
/// use hurray_core::file::{KvSection, KvValue};
/// // One entry: "arch" = "llama".
/// let mut b = vec![1, 0, 0, 0, 4, 0];
/// b.extend_from_slice(b"arch");
/// b.push(0x01);
/// b.extend_from_slice(&5u32.to_le_bytes());
/// b.extend_from_slice(b"llama");
/// let kv = KvSection::parse(&b, 0, 16)?;
/// assert_eq!(kv.get("arch"), Some(KvValue::String("llama")));
/// assert_eq!(kv.len(), 1);
/// # Ok::<(), hurray_core::file::FileError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KvSection<'a> {
    bytes: &'a [u8],
    count: u32,
}

impl<'a> KvSection<'a> {
    /// Parses and validates a whole KV section. `base` is its offset in
    /// the file (for errors); `max_entries` caps `kv_count`.
    ///
    /// # Errors
    /// The first rule broken, at its absolute offset.
    pub fn parse(bytes: &'a [u8], base: u64, max_entries: u32) -> Result<Self, FileError> {
        let pos = |o: usize| base.saturating_add(o as u64);
        let fail = |at: u64, kind| Err(FileError::new(at, kind));
        let Ok((count, _)) = U32::read_from_prefix(bytes) else {
            return fail(base, FileErrorKind::KvLength);
        };
        let count = count.get();
        if count > max_entries {
            return fail(base, FileErrorKind::TooManyKvEntries { limit: max_entries });
        }
        let mut at = 4;
        for i in 0..count {
            let (key, _, next) =
                read_kv_entry(bytes, at).map_err(|(o, k)| FileError::new(pos(o), k))?;
            // Keys are unique: compare with every earlier key (count is
            // capped, so this stays bounded).
            let mut prev = 4;
            for _ in 0..i {
                let Ok((other, _, after)) = read_kv_entry(bytes, prev) else {
                    break;
                };
                if other == key {
                    return fail(pos(at), FileErrorKind::DuplicateName);
                }
                prev = after;
            }
            at = next;
        }
        if at != bytes.len() {
            return fail(pos(at), FileErrorKind::KvLength);
        }
        Ok(Self { bytes, count })
    }

    /// Number of entries.
    #[must_use]
    pub const fn len(&self) -> u32 {
        self.count
    }

    /// Whether there is no entry.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The section's bytes.
    #[must_use]
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The value of `key`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<KvValue<'a>> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The entries in file order.
    #[must_use]
    pub const fn iter(&self) -> KvIter<'a> {
        KvIter {
            bytes: self.bytes,
            at: 4,
            left: self.count,
        }
    }
}

/// Iterator over a [`KvSection`]'s entries.
#[derive(Debug, Clone)]
pub struct KvIter<'a> {
    bytes: &'a [u8],
    at: usize,
    left: u32,
}

impl<'a> Iterator for KvIter<'a> {
    type Item = (&'a str, KvValue<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        let (key, value, next) = read_kv_entry(self.bytes, self.at).ok()?;
        self.left = self.left.saturating_sub(1);
        self.at = next;
        let key = core::str::from_utf8(key).ok()?;
        Some((key, value))
    }
}

type KvResult<T> = Result<T, (usize, FileErrorKind)>;

/// Reads one entry at `at`: key bytes, value, next offset.
fn read_kv_entry(bytes: &[u8], at: usize) -> KvResult<(&[u8], KvValue<'_>, usize)> {
    let short = (at, FileErrorKind::KvLength);
    let rest = bytes.get(at..).ok_or(short)?;
    let (len, _) = U16::read_from_prefix(rest).map_err(|_| short)?;
    let len = usize::from(len.get());
    let key_at = at.checked_add(2).ok_or(short)?;
    let tag_at = key_at.checked_add(len).ok_or(short)?;
    let key = bytes.get(key_at..tag_at).ok_or(short)?;
    if key.is_empty() {
        return Err((at, FileErrorKind::EmptyName));
    }
    if core::str::from_utf8(key).is_err() {
        return Err((key_at, FileErrorKind::NotUtf8));
    }
    let &tag = bytes.get(tag_at).ok_or((tag_at, FileErrorKind::KvLength))?;
    let value_at = tag_at.checked_add(1).ok_or(short)?;
    let (value, next) = if tag == tag::ARRAY {
        let elem_at = value_at;
        let &elem = bytes
            .get(elem_at)
            .ok_or((elem_at, FileErrorKind::KvLength))?;
        if !(tag::STRING..=tag::BYTES).contains(&elem) {
            return Err((elem_at, FileErrorKind::KvValueTag(elem)));
        }
        let count_at = elem_at.checked_add(1).ok_or(short)?;
        let (count, _) = bytes
            .get(count_at..)
            .and_then(|r| U32::read_from_prefix(r).ok())
            .ok_or((count_at, FileErrorKind::KvLength))?;
        let count = count.get();
        let start = count_at.checked_add(4).ok_or(short)?;
        let pos = skip_payloads(bytes, start, elem, count)?;
        let payloads = bytes.get(start..pos).ok_or(short)?;
        (
            KvValue::Array(KvArray::Encoded {
                tag: elem,
                count,
                bytes: payloads,
            }),
            pos,
        )
    } else {
        read_payload(bytes, value_at, tag).map_err(|(o, k)| match k {
            FileErrorKind::KvValueTag(_) => (tag_at, k),
            _ => (o, k),
        })?
    };
    Ok((key, value, next))
}

/// Reads one scalar payload of type `tag` at `at`.
fn read_payload<'b>(bytes: &'b [u8], at: usize, tag: u8) -> KvResult<(KvValue<'b>, usize)> {
    let short = (at, FileErrorKind::KvLength);
    let rest = bytes.get(at..).ok_or(short)?;
    let eight = |r: &[u8]| -> KvResult<u64> {
        U64::read_from_prefix(r)
            .map(|(v, _)| v.get())
            .map_err(|_| short)
    };
    let sized = |r: &'b [u8]| -> KvResult<(&'b [u8], usize)> {
        let (len, body) = U32::read_from_prefix(r).map_err(|_| short)?;
        let len = usize::try_from(len.get()).map_err(|_| short)?;
        let data = body.get(..len).ok_or(short)?;
        let next = at
            .checked_add(4)
            .and_then(|n| n.checked_add(len))
            .ok_or(short)?;
        Ok((data, next))
    };
    let next8 = at.checked_add(8).ok_or(short);
    match tag {
        tag::STRING => {
            let (data, next) = sized(rest)?;
            let s = core::str::from_utf8(data)
                .map_err(|_| (at.saturating_add(4), FileErrorKind::NotUtf8))?;
            Ok((KvValue::String(s), next))
        }
        #[allow(clippy::cast_possible_wrap)]
        tag::INT64 => Ok((KvValue::Int64(eight(rest)? as i64), next8?)),
        tag::UINT64 => Ok((KvValue::Uint64(eight(rest)?), next8?)),
        tag::FLOAT64 => Ok((KvValue::Float64(f64::from_bits(eight(rest)?)), next8?)),
        tag::BOOL => match rest.first() {
            Some(&b @ (0 | 1)) => Ok((KvValue::Bool(b == 1), at.saturating_add(1))),
            Some(&b) => Err((at, FileErrorKind::KvBool(b))),
            None => Err(short),
        },
        tag::BYTES => {
            let (data, next) = sized(rest)?;
            Ok((KvValue::Bytes(data), next))
        }
        other => Err((at, FileErrorKind::KvValueTag(other))),
    }
}

/// Bytes `value`'s payload takes (tag excluded), or `None` when it cannot
/// be encoded (a length past `u32`, a nested or mixed array, an encoded
/// array that is not valid).
pub(crate) fn payload_len(value: &KvValue<'_>) -> Option<u64> {
    let sized = |n: usize| u32::try_from(n).ok().map(|n| 4 + u64::from(n));
    match value {
        KvValue::String(s) => sized(s.len()),
        KvValue::Bytes(b) => sized(b.len()),
        KvValue::Int64(_) | KvValue::Uint64(_) | KvValue::Float64(_) => Some(8),
        KvValue::Bool(_) => Some(1),
        KvValue::Array(a) => {
            u32::try_from(a.len()).ok()?;
            if let KvArray::Encoded { tag, count, bytes } = *a {
                let valid = encoded_array_ok(tag, count, bytes);
                return (bytes.len() as u64).checked_add(5).filter(|_| valid);
            }
            let mut total: u64 = 5;
            for v in a.iter() {
                if matches!(v, KvValue::Array(_)) {
                    return None;
                }
                total = total.checked_add(payload_len(&v)?)?;
            }
            Some(total)
        }
    }
}

/// Reads `count` payloads of type `tag` from `at`; returns where they end.
fn skip_payloads(bytes: &[u8], mut at: usize, tag: u8, count: u32) -> KvResult<usize> {
    for _ in 0..count {
        (_, at) = read_payload(bytes, at, tag)?;
    }
    Ok(at)
}

/// Whether `count` payloads of type `tag` fill `bytes` exactly.
fn encoded_array_ok(tag: u8, count: u32, bytes: &[u8]) -> bool {
    (tag::STRING..=tag::BYTES).contains(&tag)
        && skip_payloads(bytes, 0, tag, count).is_ok_and(|end| end == bytes.len())
}
