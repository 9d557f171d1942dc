//! `CLIENT_HELLO` and `SERVER_HELLO` (one payload layout for both), and the
//! layout-entry lists they and `TENSOR_REQUEST` carry.
//!
//! [`Hello::decode`] checks every rule of `[NP-HELLO-3]` and `[NP-LAYOUT-1]`
//! (`docs/spec/network.md`) before handing out a value. Nothing here can
//! panic or allocate.

use static_assertions::{assert_eq_size, const_assert_eq};
use zerocopy::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::codes::{DeviceTag, MemoryClass, is_private_code};
use crate::descriptor::layout;
use crate::error::EncodeError;

use super::codes::Capabilities;
use super::cursor::{Reader, Writer};
use super::error::NetError;
use super::request::{invalid, reserved_bits};

/// The protocol version this implementation speaks.
pub const PROTOCOL_VERSION: u32 = 1;

/// The smallest `max_message_size` a peer may announce (`[NP-HELLO-3]`):
/// every control message we send fits in it.
pub const MIN_MESSAGE_SIZE: u32 = 512;

/// The fixed first 16 bytes of a hello payload
/// (`docs/spec/network.md` § Session establishment), in wire order.
#[derive(FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned, Debug, Clone, Copy)]
#[repr(C)]
pub struct HelloFixed {
    /// Protocol version.
    pub protocol_version: U32,
    /// Largest payload the sender accepts.
    pub max_message_size: U32,
    /// Capability bits.
    pub capability_flags: U64,
}

assert_eq_size!(HelloFixed, [u8; 16]);
const_assert_eq!(core::mem::offset_of!(HelloFixed, capability_flags), 8);

/// One layout entry: a tag, and opaque metadata for an extension tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LayoutEntry<'a> {
    /// The layout tag.
    pub tag: u8,
    /// Extension metadata (`0xF0`–`0xFE` tags only; empty otherwise).
    pub ext_metadata: &'a [u8],
}

/// A validated list of layout entries (the bytes after the `uint16` count).
///
/// ```
/// use hurray_core::net::LayoutList;
/// // Row-major, then an extension entry 0xF3 with 2 metadata bytes, then column-major.
/// let list = LayoutList::parse(3, &[0x01, 0xF3, 2, 0, 0xAA, 0xBB, 0x02]).unwrap();
/// let tags: Vec<u8> = list.iter().map(|e| e.tag).collect();
/// assert_eq!(tags, [0x01, 0xF3, 0x02]);
/// assert!(LayoutList::tags(&[0x01, 0x77]).is_none()); // 0x77 is no layout tag
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LayoutList<'a> {
    count: u16,
    bytes: &'a [u8],
}

impl<'a> LayoutList<'a> {
    /// The empty list.
    pub const EMPTY: LayoutList<'static> = LayoutList {
        count: 0,
        bytes: &[],
    };

    /// A list of plain (non-extension) tags, `None` if one is not a known
    /// public layout tag or there are more than 65,535.
    #[must_use]
    pub fn tags(tags: &'a [u8]) -> Option<Self> {
        let count = u16::try_from(tags.len()).ok()?;
        if tags.iter().any(|&t| !is_plain_tag(t)) {
            return None;
        }
        Some(Self { count, bytes: tags })
    }

    /// Validates `count` entries filling exactly `bytes`.
    ///
    /// # Errors
    /// As for a received list, with offsets counted from the first entry.
    pub fn parse(count: u16, bytes: &'a [u8]) -> Result<Self, NetError> {
        let mut r = Reader::new(bytes);
        let list = read_entries(&mut r, count)?;
        r.finish()?;
        Ok(list)
    }

    /// Number of entries.
    #[must_use]
    #[inline]
    pub const fn len(&self) -> u16 {
        self.count
    }

    /// Whether there is no entry.
    #[must_use]
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The entries' wire bytes (after the count).
    #[must_use]
    #[inline]
    pub const fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Bytes on the wire, count included.
    #[must_use]
    #[inline]
    pub const fn encoded_len(&self) -> usize {
        self.bytes.len().saturating_add(2)
    }

    /// The entries in order (preference order in a request or hello).
    pub fn iter(&self) -> impl Iterator<Item = LayoutEntry<'a>> + 'a {
        let mut r = Reader::new(self.bytes);
        // Validated at construction: every read succeeds.
        (0..self.count).map_while(move |_| read_entry(&mut r).ok())
    }

    /// Whether a non-extension `tag` is in the list.
    #[must_use]
    pub fn contains_tag(&self, tag: u8) -> bool {
        self.iter().any(|e| e.tag == tag)
    }

    pub(crate) fn write(&self, w: &mut Writer<'_>) {
        w.u16(self.count);
        w.put(self.bytes);
    }
}

/// A non-extension layout tag this version of the protocol knows.
const fn is_plain_tag(tag: u8) -> bool {
    layout::is_known_tag(tag) && !is_private_code(tag)
}

fn read_entry<'a>(r: &mut Reader<'a>) -> Result<LayoutEntry<'a>, NetError> {
    let at = r.offset();
    let tag = r.u8()?;
    let ext_metadata = if is_private_code(tag) {
        r.bytes16()?
    } else if is_plain_tag(tag) {
        &[]
    } else {
        return Err(invalid(at, "layout_tag", u64::from(tag)));
    };
    Ok(LayoutEntry { tag, ext_metadata })
}

/// Reads `count` entries.
pub(crate) fn read_entries<'a>(r: &mut Reader<'a>, count: u16) -> Result<LayoutList<'a>, NetError> {
    let start = r.remaining();
    for _ in 0..count {
        read_entry(r)?;
    }
    let used = start.len().saturating_sub(r.remaining().len());
    Ok(LayoutList {
        count,
        bytes: start.get(..used).unwrap_or(&[]),
    })
}

/// The payload of `CLIENT_HELLO` and `SERVER_HELLO`.
///
/// ```
/// use hurray_core::net::{Capabilities, Hello, LayoutList, PROTOCOL_VERSION};
///
/// let hello = Hello {
///     protocol_version: PROTOCOL_VERSION,
///     max_message_size: 1 << 20,
///     capabilities: Capabilities::NONE,
///     layouts: LayoutList::tags(&[0x01, 0x02]).unwrap(),
///     devices: &[0x00],
///     memory_classes: &[0x00],
/// };
/// let mut buf = [0u8; 64];
/// let n = hello.encode(&mut buf)?;
/// assert_eq!(n, hello.encoded_len());
/// assert_eq!(Hello::decode(&buf[..n]).unwrap(), hello);
/// # Ok::<(), hurray_core::EncodeError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Hello<'a> {
    /// The sender's protocol version (the server's: the one it will use).
    pub protocol_version: u32,
    /// Largest payload the sender accepts.
    pub max_message_size: u32,
    /// The sender's capabilities.
    pub capabilities: Capabilities,
    /// Layouts the sender consumes (client) or produces (server).
    pub layouts: LayoutList<'a>,
    /// Device tag codes the sender accepts or targets (each a valid tag).
    pub devices: &'a [u8],
    /// Memory class codes; empty means `STANDARD` only.
    pub memory_classes: &'a [u8],
}

impl<'a> Hello<'a> {
    /// Decodes and validates a hello payload.
    ///
    /// # Errors
    /// The first field at fault, with its message offset.
    pub fn decode(payload: &'a [u8]) -> Result<Self, NetError> {
        let mut r = Reader::new(payload);
        let fixed: HelloFixed = r.read()?;
        let max_message_size = fixed.max_message_size.get();
        if max_message_size < MIN_MESSAGE_SIZE {
            return Err(invalid(16, "max_message_size", u64::from(max_message_size)));
        }
        let bits = fixed.capability_flags.get();
        let Some(capabilities) = Capabilities::from_bits(bits) else {
            return Err(reserved_bits(20, "capability_flags", bits));
        };
        let count = r.u16()?;
        let layouts = read_entries(&mut r, count)?;
        let devices = read_codes(&mut r, "device_tag", |c| DeviceTag::from_code(c).is_some())?;
        let memory_classes = if r.is_empty() {
            &[][..]
        } else {
            read_codes(&mut r, "memory_class", |c| {
                MemoryClass::from_code(c).is_some()
            })?
        };
        r.finish()?;
        Ok(Self {
            protocol_version: fixed.protocol_version.get(),
            max_message_size,
            capabilities,
            layouts,
            devices,
            memory_classes,
        })
    }

    /// Payload bytes on the wire.
    #[must_use]
    pub const fn encoded_len(&self) -> usize {
        self.layouts
            .encoded_len()
            .saturating_add(self.devices.len())
            .saturating_add(self.memory_classes.len())
            .saturating_add(16 + 2 + 2)
    }

    /// Writes the payload (always with the memory-class list).
    ///
    /// # Errors
    /// [`EncodeError::OutputTooSmall`]; [`EncodeError::LengthMismatch`] for
    /// a list longer than 65,535.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, EncodeError> {
        let dev = u16::try_from(self.devices.len()).map_err(|_| too_long("devices"))?;
        let mc =
            u16::try_from(self.memory_classes.len()).map_err(|_| too_long("memory_classes"))?;
        let mut w = Writer::new(out, self.encoded_len())?;
        w.u32(self.protocol_version);
        w.u32(self.max_message_size);
        w.u64(self.capabilities.bits());
        self.layouts.write(&mut w);
        w.u16(dev);
        w.put(self.devices);
        w.u16(mc);
        w.put(self.memory_classes);
        w.finish()
    }

    /// Whether device `tag` is in the list.
    #[must_use]
    pub fn lists_device(&self, tag: u8) -> bool {
        self.devices.contains(&tag)
    }

    /// Whether memory class `code` is accepted (an empty list means
    /// `STANDARD`, `0x00`, only).
    #[must_use]
    pub fn accepts_memory_class(&self, code: u8) -> bool {
        self.memory_classes.contains(&code) || self.memory_classes.is_empty() && code == 0
    }
}

pub(crate) const fn too_long(what: &'static str) -> EncodeError {
    EncodeError::LengthMismatch {
        what,
        len: u32::MAX,
        expected: u16::MAX as u32,
    }
}

/// A `uint16`-counted list of codes, each of which `ok` must accept.
fn read_codes<'a>(
    r: &mut Reader<'a>,
    field: &'static str,
    ok: impl Fn(u8) -> bool,
) -> Result<&'a [u8], NetError> {
    let at = r.offset().saturating_add(2);
    let codes = r.bytes16()?;
    for (i, &c) in (0u32..).zip(codes) {
        if !ok(c) {
            return Err(invalid(at.saturating_add(i), field, u64::from(c)));
        }
    }
    Ok(codes)
}
