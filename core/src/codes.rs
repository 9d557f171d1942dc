//! The three one-byte code fields of a buffer handle entry.
//!
//! Codes are decoded through a `match`, never transmuted: an unknown byte is
//! data (it comes back as `None` here and as an error carrying the byte from
//! the decoders), not undefined behaviour. The numeric values are normative
//! (`docs/spec/buffer-protocol.md` § Device Tags, § Sync Modes,
//! § Memory Classes) and never change within a major version.

macro_rules! code_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $code:expr, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        #[non_exhaustive]
        #[repr(u8)]
        pub enum $name {
            $( $(#[$vmeta])* $variant = $code, )+
        }

        impl $name {
            /// Every value, in ascending code order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// Decodes a wire byte; `None` for a code this version does not know.
            #[must_use]
            #[inline]
            pub const fn from_code(code: u8) -> Option<Self> {
                match code {
                    $( $code => Some(Self::$variant), )+
                    _ => None,
                }
            }

            /// The wire byte of this value.
            #[must_use]
            #[inline]
            pub const fn code(self) -> u8 {
                self as u8
            }
        }
    };
}

code_enum! {
    /// The memory space a buffer lives in (byte 12 of the entry).
    ///
    /// The code of each base device equals its DLPack `DLDeviceType` (and,
    /// for codes 1–16, Arrow's `ArrowDeviceType`) value. The DLPack codes
    /// that name a *kind of memory* of another device — 3 (`kDLCUDAHost`),
    /// 11 (`kDLROCMHost`), 13 (`kDLCUDAManaged`) — are not device tags: hurray
    /// expresses them with [`MemoryClass`], and they decode as
    /// [`Error::InvalidDeviceTag`](crate::Error::InvalidDeviceTag).
    ///
    /// ```
    /// use hurray_core::DeviceTag;
    /// assert_eq!(DeviceTag::Cuda.code(), 2);
    /// assert_eq!(DeviceTag::from_code(8), Some(DeviceTag::Metal));
    /// assert_eq!(DeviceTag::from_code(3), None); // kDLCUDAHost is a memory class here
    /// ```
    pub enum DeviceTag {
        /// Host memory (`kDLCPU`).
        Cpu = 1,
        /// NVIDIA CUDA device memory (`kDLCUDA`).
        Cuda = 2,
        /// OpenCL device memory (`kDLOpenCL`).
        OpenCl = 4,
        /// Vulkan device memory (`kDLVulkan`).
        Vulkan = 7,
        /// Apple Metal (`kDLMetal`).
        Metal = 8,
        /// Verilog simulator buffers (`kDLVPI`).
        Vpi = 9,
        /// AMD ROCm / HIP device memory (`kDLROCM`).
        Rocm = 10,
        /// A device defined by an extension (`kDLExtDev`).
        ExtDev = 12,
        /// Intel oneAPI unified shared memory (`kDLOneAPI`).
        OneApi = 14,
        /// WebGPU (`kDLWebGPU`).
        WebGpu = 15,
        /// Qualcomm Hexagon DSP (`kDLHexagon`).
        Hexagon = 16,
        /// Microsoft MAIA (`kDLMAIA`, DLPack only).
        Maia = 17,
        /// AWS Trainium (`kDLTrn`, DLPack only).
        Trainium = 18,
    }
}

code_enum! {
    /// The producer–consumer ordering guarantee of a buffer (byte 13).
    ///
    /// See `docs/spec/buffer-protocol.md` § Sync Modes for what each side
    /// must do.
    ///
    /// ```
    /// use hurray_core::SyncMode;
    /// assert_eq!(SyncMode::Event.code(), 0x01);
    /// assert_eq!(SyncMode::from_code(0x07), None);
    /// ```
    pub enum SyncMode {
        /// The producer finished every write before publishing the handle;
        /// the consumer may read at once. The only mode allowed for CPU buffers.
        ProducerSynced = 0x00,
        /// Writes complete when an event recorded by the producer fires; the
        /// consumer waits on that event (passed out of band) before reading.
        Event = 0x01,
        /// The consumer supplies the stream the producer must order its writes
        /// on; the consumer may read on that stream without further waiting.
        ConsumerStream = 0x02,
    }
}

code_enum! {
    /// How a buffer's memory can be reached (byte 14, ADR-020).
    ///
    /// ```
    /// use hurray_core::MemoryClass;
    /// assert_eq!(MemoryClass::default(), MemoryClass::Standard);
    /// assert_eq!(MemoryClass::Unified.code(), 2);
    /// ```
    pub enum MemoryClass {
        /// Ordinary memory of the tagged device.
        Standard = 0,
        /// Page-locked host memory registered with the tagged device
        /// (`kDLCUDAHost`, `kDLROCMHost`).
        HostPinned = 1,
        /// Memory migrated on demand between host and device (CUDA managed,
        /// Metal shared storage; `kDLCUDAManaged`).
        Unified = 2,
        /// Memory of a peer device mapped into the tagged device's space.
        PeerToPeer = 3,
    }
}

impl Default for MemoryClass {
    #[inline]
    fn default() -> Self {
        Self::Standard
    }
}
