//! Any bytes through the tensor-descriptor decoder: `parse`, `parse_prefix`
//! and `parse_with` (permissive options, accepting the private layout a
//! strict parse refused). Never a panic; the three agree; every accessor of
//! an accepted view keeps the invariants of `common::check_view`; and the
//! view re-encoded through `TensorDescriptor` (and, where it can hold the
//! descriptor, `DescriptorBuilder::from_view`) reproduces a 1.0
//! descriptor's bytes exactly.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use common::{Owned, check_view, permissive, refused_id};
use hurray_core::{DescriptorBuilder, DescriptorErrorKind, TensorView};
use libfuzzer_sys::fuzz_target;

fn check_accepted(data: &[u8], view: &TensorView<'_>, ids: &[u64]) {
    check_view(view);
    let owned = Owned::of(view);
    let canonical = owned
        .encode()
        .unwrap_or_else(|e| panic!("an accepted descriptor does not re-encode: {e}"));
    if view.version().1 == 0 {
        assert_eq!(canonical, data, "re-encoding changed a 1.0 descriptor");
    } else {
        // A later minor version's appended bytes are skipped: the canonical
        // 1.0 form describes the same tensor.
        let again =
            TensorView::parse_with(&canonical, &permissive(ids)).expect("canonical form parses");
        assert_eq!(Owned::of(&again), owned);
    }
    match DescriptorBuilder::<64, 255>::from_view(view) {
        Ok(b) => {
            let mut out = vec![0u8; canonical.len()];
            let n = b
                .encode(&mut out)
                .expect("the builder re-encodes an accepted descriptor");
            assert_eq!(&out[..n], &canonical[..]);
        }
        Err(hurray_core::EncodeError::Unsupported { .. }) => {}
        Err(e) => panic!("builder refused an accepted descriptor: {e}"),
    }
}

fuzz_target!(|data: &[u8]| {
    let strict = TensorView::parse(data);
    let ids: Vec<u64> = strict
        .as_ref()
        .err()
        .and_then(refused_id)
        .into_iter()
        .collect();
    let loose = TensorView::parse_with(data, &permissive(&ids));
    if let Ok(v) = &strict {
        assert_eq!(
            loose.as_ref(),
            Ok(v),
            "permissive options refused what strict ones accept"
        );
    }
    // A stream: the first descriptor and what follows it.
    let prefix = TensorView::parse_prefix_with(data, &permissive(&ids));
    match (&prefix, &loose) {
        (Ok((v, rest)), _) => {
            assert_eq!(v.as_bytes().len() + rest.len(), data.len());
            let exact = TensorView::parse_with(v.as_bytes(), &permissive(&ids));
            assert_eq!(exact.as_ref(), Ok(v));
            assert_eq!(loose.is_ok(), rest.is_empty());
            match &loose {
                Ok(l) => assert_eq!(l, v),
                Err(e) => assert!(matches!(
                    e.kind(),
                    DescriptorErrorKind::TrailingBytes { .. }
                )),
            }
        }
        // An exact parse is a prefix parse plus the trailing-bytes check.
        (Err(pe), Err(le)) => assert_eq!(pe, le),
        (Err(e), Ok(_)) => panic!("parse accepted what parse_prefix refused: {e}"),
    }
    if let Ok((v, _)) = TensorView::parse_prefix(data) {
        assert_eq!(prefix.as_ref().ok().map(|p| p.0), Some(v));
    }
    if let Ok(v) = loose {
        check_accepted(data, &v, &ids);
    }
});
