//! decode -> encode -> decode over tensor descriptors: the re-encoded
//! (canonical) descriptor describes the same tensor, and encoding it again
//! gives the same bytes.
#![no_main]

use hurray_core::{DescriptorBuilder, TensorView};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(view) = TensorView::parse(data) else { return };
    let builder = match DescriptorBuilder::<32, 64>::from_view(&view) {
        Ok(b) => b,
        // Over the builder's fixed capacity: not a round-trip case.
        Err(_) => return,
    };
    let canonical: heapless::Vec<u8, 4096> = builder.to_vec().expect("an accepted descriptor re-encodes");
    let again = TensorView::parse(&canonical).expect("the re-encoded descriptor parses");
    assert_eq!(again.dtype(), view.dtype());
    assert!(again.shape().iter().eq(view.shape().iter()));
    assert_eq!(again.strides().map(|s| s.iter().collect::<Vec<_>>()), view.strides().map(|s| s.iter().collect::<Vec<_>>()));
    assert!(again.buffers().iter().eq(view.buffers().iter()));
    assert_eq!(again.byte_offset(), view.byte_offset());
    assert_eq!(again.flags(), view.flags());
    assert_eq!(again.data_buffer_index(), view.data_buffer_index());
    let twice: heapless::Vec<u8, 4096> =
        DescriptorBuilder::<32, 64>::from_view(&again).unwrap().to_vec().unwrap();
    assert_eq!(twice, canonical);
    // A canonical input with minor version 0 round-trips byte for byte.
    if view.version().1 == 0 && data.get(..canonical.len()) == Some(&canonical[..]) {
        assert_eq!(view.as_bytes(), &canonical[..]);
    }
});
