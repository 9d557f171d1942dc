//! The three one-byte code fields of a buffer handle: device tag, sync mode
//! and memory class, with the code spaces of the hurray buffer protocol
//! (`docs/spec/buffer-protocol.md` § Device Tags, § Sync Modes,
//! § Memory Classes).
//!
//! Codes are decoded through a `match`, never transmuted: an unknown byte is
//! data (it comes back as an error carrying the byte), not undefined
//! behaviour. Implementation-private codes (`0xF0`–`0xFE`) are carried as
//! [`DeviceTag::Private`] and [`MemoryClass::Private`]; their meaning is
//! agreed out of band by the two parties.
//!
//! Hurray device tags are **not** DLPack or Arrow device numbers; the mapping
//! to those lives in [`interop`](crate::interop).

/// First code of the implementation-private range of every code space.
pub const PRIVATE_FIRST: u8 = 0xF0;
/// Last code of the implementation-private range of every code space.
pub const PRIVATE_LAST: u8 = 0xFE;

/// Declares a code enum from one list — variant, wire code, spec name —
/// and derives from it the list of named values, the decoder, `code` and
/// `name`, so each code is written once. The code type is `u8` and the
/// decoder `pub fn from_code` unless both are given (`pub enum E: u32, ALL,
/// fn named`). An optional `Private(u8)` variant carries the
/// implementation-private range `0xF0`–`0xFE`; an optional `..` variant
/// keeps any other value, for a decoder written by hand over the generated
/// one.
macro_rules! code_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident, $list:ident { $($body:tt)* }
    ) => {
        $crate::codes::code_enum! {
            $(#[$meta])*
            pub enum $name: u8, $list, pub fn from_code { $($body)* }
        }
    };
    (
        $(#[$meta:meta])*
        pub enum $name:ident: $repr:ident, $list:ident, $vis:vis fn $from:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $code:literal => $vname:literal, )*
            $( @ $(#[$pmeta:meta])* $private:ident(u8), )?
            $( .. $(#[$ometa:meta])* $other:ident($orepr:ty) => $oname:literal, )?
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            $( $(#[$pmeta])* $private(u8), )?
            $( $(#[$ometa])* $other($orepr), )?
        }

        impl $name {
            /// Every named (non-private) value, in code order.
            pub const $list: &'static [Self] = &[$(Self::$variant),*];

            /// Decodes a wire code; `None` for a reserved, invalid or unknown
            /// code.
            #[must_use]
            #[inline]
            $vis const fn $from(code: $repr) -> Option<Self> {
                Some(match code {
                    $( $code => Self::$variant, )*
                    $( $crate::codes::PRIVATE_FIRST..=$crate::codes::PRIVATE_LAST => {
                        Self::$private(code)
                    } )?
                    _ => return None,
                })
            }

            /// The wire code. A value that carries its own code (a private
            /// or a kept unknown one) is written as it is; the constructors
            /// that take a private code check its range.
            #[must_use]
            #[inline]
            pub const fn code(self) -> $repr {
                // On bare metal a named value's code is read from a table at
                // its place (less code than the match's jump table);
                // elsewhere matched (fewer instructions).
                const CODES: &[$repr] = &[$($code),*];
                match self {
                    $( Self::$private(code) => code, )?
                    $( Self::$other(code) => code, )?
                    #[allow(unreachable_patterns)]
                    _ if cfg!(target_os = "none") => match CODES.split_at_checked(self.place()) {
                        Some((_, [c, ..])) => *c,
                        _ => 0,
                    },
                    $( Self::$variant => $code, )*
                }
            }

            /// The value's place in the list (a private or kept value's is
            /// the list's length): the index of the tables read by value.
            /// The compiler folds it to the value's tag.
            #[inline]
            pub(crate) const fn place(self) -> usize {
                let mut i = 0usize;
                $(
                    if matches!(self, Self::$variant) {
                        return i;
                    }
                    i = i.wrapping_add(1);
                )*
                i
            }

            /// The named value at `place` in the list; `None` past it. The
            /// compiler folds it to a bound on the tag.
            #[inline]
            #[allow(dead_code)]
            pub(crate) const fn at_place(place: usize) -> Option<Self> {
                let mut i = 0usize;
                $(
                    if place == i {
                        return Some(Self::$variant);
                    }
                    i = i.wrapping_add(1);
                )*
                None
            }

            $(
                /// Whether this is an implementation-private value.
                #[must_use]
                #[inline]
                pub const fn is_private(self) -> bool {
                    matches!(self, Self::$private(_))
                }
            )?

            /// The spec's name (`"private"` for a private code; the
            /// catch-all's own name for a kept unknown one).
            #[must_use]
            pub const fn name(self) -> &'static str {
                match self {
                    $( Self::$variant => $vname, )*
                    $( Self::$private(_) => "private", )?
                    $( Self::$other(_) => $oname, )?
                }
            }
        }
    };
}
pub(crate) use code_enum;

/// Declares a flag word — a newtype over its bits, with one constant a flag
/// — and derives `bits`, `union` and `contains`, and `from_bits` (every bit
/// no flag names is reserved) unless the word is declared `: manual`, whose
/// `from_bits` has a rule of its own, written by hand next to it.
macro_rules! flag_set {
    (
        $(#[$meta:meta])*
        pub struct $name:ident($repr:ty) {
            $( $(#[$fmeta:meta])* const $flag:ident = $bits:expr; )*
        }
    ) => {
        $crate::codes::flag_set! {
            $(#[$meta])*
            pub struct $name($repr): manual { $( $(#[$fmeta])* const $flag = $bits; )* }
        }

        impl $name {
            /// The flags of `bits`; `None` when a reserved bit is set.
            #[must_use]
            #[inline]
            pub const fn from_bits(bits: $repr) -> Option<Self> {
                if bits & !(0 $(| ($bits))*) == 0 {
                    Some(Self(bits))
                } else {
                    None
                }
            }
        }
    };
    (
        $(#[$meta:meta])*
        pub struct $name:ident($repr:ty): manual {
            $( $(#[$fmeta:meta])* const $flag:ident = $bits:expr; )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        pub struct $name($repr);

        impl $name {
            $( $(#[$fmeta])* pub const $flag: Self = Self($bits); )*

            /// The raw bits.
            #[must_use]
            #[inline]
            pub const fn bits(self) -> $repr {
                self.0
            }

            /// Both sets of flags.
            #[must_use]
            #[inline]
            pub const fn union(self, other: Self) -> Self {
                Self(self.0 | other.0)
            }

            /// Whether every flag of `other` is set.
            #[must_use]
            #[inline]
            pub const fn contains(self, other: Self) -> bool {
                self.0 & other.0 == other.0
            }
        }
    };
}
pub(crate) use flag_set;

/// Whether `code` lies in the implementation-private range `0xF0`–`0xFE`.
///
/// ```
/// assert!(hurray_core::is_private_code(0xF0));
/// assert!(!hurray_core::is_private_code(0xFF));
/// ```
#[must_use]
#[inline]
pub const fn is_private_code(code: u8) -> bool {
    code >= PRIVATE_FIRST && code <= PRIVATE_LAST
}

code_enum! {
    /// The memory space a buffer lives in (byte 12 of a buffer handle;
    /// `docs/spec/buffer-protocol.md` § Device Tags). Codes outside the named
    /// ones and [`DeviceTag::Private`]'s `0xF0`–`0xFE` are rejected.
    ///
    /// ```
    /// use hurray_core::DeviceTag;
    /// assert_eq!(DeviceTag::Cuda.code(), 0x01);
    /// assert_eq!(DeviceTag::from_code(0x03), Some(DeviceTag::Metal));
    /// assert_eq!(DeviceTag::from_code(0xF3), Some(DeviceTag::Private(0xF3)));
    /// assert_eq!(DeviceTag::from_code(0x09), None); // reserved
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    #[non_exhaustive]
    pub enum DeviceTag, NAMED {
        /// Host memory of the producer's process (`0x00`).
        Cpu = 0x00 => "cpu",
        /// NVIDIA CUDA device memory (`0x01`).
        Cuda = 0x01 => "cuda",
        /// AMD ROCm / HIP device memory (`0x02`).
        Rocm = 0x02 => "rocm",
        /// Apple Metal buffer (`0x03`).
        Metal = 0x03 => "metal",
        /// Vulkan device memory (`0x04`).
        Vulkan = 0x04 => "vulkan",
        /// WebGPU buffer (`0x05`).
        WebGpu = 0x05 => "webgpu",
        /// Qualcomm Hexagon DSP/NPU memory (`0x06`).
        Hexagon = 0x06 => "hexagon",
        /// Intel Level Zero / oneAPI memory (`0x07`).
        LevelZero = 0x07 => "level_zero",
        /// OpenCL memory object (`0x08`).
        OpenCl = 0x08 => "opencl",
        @
        /// An implementation-private device, code `0xF0`–`0xFE`, agreed out of
        /// band. Constructing one with a code outside that range is not possible
        /// through [`DeviceTag::from_code`]; [`DeviceTag::private`] checks it.
        Private(u8),
    }
}

impl DeviceTag {
    /// A private device tag; `None` unless `code` is in `0xF0`–`0xFE`.
    ///
    /// ```
    /// use hurray_core::DeviceTag;
    /// assert_eq!(DeviceTag::private(0xF0), Some(DeviceTag::Private(0xF0)));
    /// assert_eq!(DeviceTag::private(0x10), None);
    /// ```
    #[must_use]
    #[inline]
    pub const fn private(code: u8) -> Option<Self> {
        if is_private_code(code) {
            Some(Self::Private(code))
        } else {
            None
        }
    }

    /// Whether `class` is a valid memory class for a buffer on this device
    /// (`docs/spec/buffer-protocol.md` § Per-Device Validity).
    ///
    /// ```
    /// use hurray_core::{DeviceTag, MemoryClass};
    /// assert!(DeviceTag::Cuda.allows(MemoryClass::PeerToPeer));
    /// assert!(!DeviceTag::Cpu.allows(MemoryClass::PeerToPeer));
    /// assert!(!DeviceTag::WebGpu.allows(MemoryClass::Unified));
    /// assert!(DeviceTag::Private(0xF1).allows(MemoryClass::Private(0xF7)));
    /// assert!(!DeviceTag::Cuda.allows(MemoryClass::Private(0xF7)));
    /// ```
    #[must_use]
    #[inline]
    pub const fn allows(self, class: MemoryClass) -> bool {
        use MemoryClass::{HostPinned, PeerToPeer, Private, Standard, Unified};
        match (self, class) {
            // Standard is valid on every device, private ones included.
            (_, Standard) => true,
            (Self::Private(_), Private(_)) => true,
            (Self::Private(_), _) | (_, Private(_)) => false,
            (Self::Cuda | Self::Rocm | Self::Vulkan | Self::LevelZero, _) => true,
            (Self::Cpu | Self::Metal | Self::Hexagon | Self::OpenCl, HostPinned | Unified) => true,
            (Self::Cpu | Self::Metal | Self::Hexagon | Self::OpenCl, PeerToPeer) => false,
            (Self::WebGpu, _) => false,
        }
    }
}

code_enum! {
    /// The producer–consumer ordering guarantee of a buffer (byte 13).
    ///
    /// See `docs/spec/buffer-protocol.md` § Sync Modes for what each side must
    /// do. Codes `0x03`–`0xFF` are rejected.
    ///
    /// ```
    /// use hurray_core::SyncMode;
    /// assert_eq!(SyncMode::Event.code(), 0x01);
    /// assert_eq!(SyncMode::from_code(0x07), None);
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    #[non_exhaustive]
    pub enum SyncMode, ALL {
        /// Writes finished before hand-off: readable at once; the only CPU mode (`0x00`).
        ProducerSynced = 0x00 => "producer_synced",
        /// The consumer waits on the producer's device event, passed out of band (`0x01`).
        Event = 0x01 => "event",
        /// Writes ordered before the stream the consumer named at hand-off (`0x02`).
        ConsumerStream = 0x02 => "consumer_stream",
    }
}

code_enum! {
    /// How a buffer's memory can be reached (byte 14, ADR-020;
    /// `docs/spec/buffer-protocol.md` § Memory Classes).
    ///
    /// Which classes a device allows is given by [`DeviceTag::allows`].
    ///
    /// ```
    /// use hurray_core::MemoryClass;
    /// assert_eq!(MemoryClass::default(), MemoryClass::Standard);
    /// assert_eq!(MemoryClass::Unified.code(), 2);
    /// assert_eq!(MemoryClass::from_code(0x04), None); // reserved
    /// assert_eq!(MemoryClass::from_code(0xF4), Some(MemoryClass::Private(0xF4)));
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
    #[cfg_attr(feature = "defmt", derive(defmt::Format))]
    #[non_exhaustive]
    pub enum MemoryClass, NAMED {
        /// Reached without a copy only by the tagged device (`0x00`); the default.
        #[default]
        Standard = 0x00 => "standard",
        /// Page-locked host memory mapped for the device (`0x01`).
        HostPinned = 0x01 => "host_pinned",
        /// Kept coherent between host and device; pages may migrate (`0x02`).
        Unified = 0x02 => "unified",
        /// Reached directly by agreed peer accelerators, not by the CPU (`0x03`).
        PeerToPeer = 0x03 => "peer",
        @
        /// An implementation-private class `0xF0`–`0xFE`, only valid on a
        /// private device.
        Private(u8),
    }
}
