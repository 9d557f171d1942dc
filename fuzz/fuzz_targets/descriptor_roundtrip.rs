//! decode -> canonical encode -> decode over tensor descriptors, every
//! version and option: the canonical form parses, describes the same tensor,
//! and is a fixed point (encoding it again gives identical bytes), through
//! both `TensorDescriptor` and `DescriptorBuilder`.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use common::{Owned, permissive, refused_id};
use hurray_core::{DescriptorBuilder, TensorView};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let ids: Vec<u64> = TensorView::parse_prefix(data)
        .err()
        .as_ref()
        .and_then(refused_id)
        .into_iter()
        .collect();
    let options = permissive(&ids);
    let Ok((view, _)) = TensorView::parse_prefix_with(data, &options) else {
        return;
    };
    let owned = Owned::of(&view);
    let canonical = owned.encode().expect("an accepted descriptor re-encodes");
    // The view borrowed as the encoder's input (no native copy) writes the
    // same canonical bytes.
    let borrowed = view.descriptor();
    let mut direct = vec![0u8; borrowed.encoded_len()];
    let n = borrowed
        .encode(&mut direct)
        .expect("a view's own descriptor encodes");
    assert_eq!(
        &direct[..n],
        &canonical[..],
        "borrowed and owned encodings differ"
    );
    let again = TensorView::parse_with(&canonical, &options).expect("the canonical form parses");
    assert_eq!(again.version(), (1, 0));
    let again_owned = Owned::of(&again);
    assert_eq!(again_owned, owned);
    assert_eq!(
        again_owned.encode().unwrap(),
        canonical,
        "canonical form is not a fixed point"
    );
    assert_eq!(again.element_count(), view.element_count());
    assert_eq!(again.strides(&mut [0; 64]), view.strides(&mut [0; 64]));
    if let Ok(b) = DescriptorBuilder::<64, 255>::from_view(&again) {
        assert_eq!(b.descriptor().encoded_len(), canonical.len());
        if canonical.len() <= 8192 {
            let out: heapless::Vec<u8, 8192> = b.to_vec().expect("the builder re-encodes");
            assert_eq!(&out[..], &canonical[..]);
        }
    }
});
