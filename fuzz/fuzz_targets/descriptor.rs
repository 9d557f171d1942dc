//! Any bytes through the tensor-descriptor view: never a panic, and every
//! accessor of an accepted view is consistent with the header.
#![no_main]

use hurray_core::TensorView;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(view) = TensorView::parse(data) {
        let header = view.header();
        assert_eq!(view.ndim(), usize::from(header.ndim));
        assert_eq!(view.buffers().len(), usize::from(header.buffer_count.get()));
        assert_eq!(view.as_bytes().len(), header.total_len.get() as usize);
        let product = view.shape().iter().try_fold(1u64, u64::checked_mul);
        assert_eq!(product, Some(view.element_count()));
        assert_eq!(view.buffers().get(usize::from(view.data_buffer_index())), Some(view.data_buffer()));
        if let Some(strides) = view.strides() {
            assert_eq!(strides.len(), view.ndim());
        }
    }
});
