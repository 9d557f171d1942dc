//! Layout negotiation and transcoding on the server
//! (`docs/spec/network.md` [NP-LAYOUT-2]; upstream § Layout Negotiation).
//!
//! The server transcodes to row-major (`0x01`) or column-major (`0x02`)
//! from a row-major, column-major or strided tensor of whole-byte elements
//! in one buffer, without a quantization or shard section: element values
//! are copied, never converted, so the logical tensor (shape, type, the
//! value at every index) is the same before and after. A transcode that
//! would materialise more than the server's limit is not done (the next
//! preference, or the native layout, is served instead).

use hurray_core::{Layout, TensorView};

/// The layouts this server transcodes to, in the order it advertises them.
pub(crate) const TARGETS: [u8; 2] = [0x01, 0x02];

/// Highest rank transcoded.
const RANK: usize = 32;

/// The layout tag the server serves for `view` given the client's
/// preferences (upstream rules 1–2): the first preferred tag the tensor is
/// stored in, or (with `allow`) one we can transcode it to within `limit`
/// bytes; else the native one. `Some(tag)` means: transcode to `tag`.
pub(crate) fn choose(
    view: &TensorView<'_>,
    preferred: impl Iterator<Item = u8>,
    allow: bool,
    limit: u64,
) -> Option<u8> {
    let native = view.layout().tag();
    for tag in preferred {
        if tag == native {
            return None;
        }
        if allow && TARGETS.contains(&tag) && can_transcode(view, limit) {
            return Some(tag);
        }
    }
    None
}

/// Bytes per element, for whole-byte element types.
fn element_bytes(view: &TensorView<'_>) -> Option<u64> {
    match view.element_type().bits() {
        Some(b) if b > 0 && b % 8 == 0 => Some(u64::from(b / 8)),
        _ => None,
    }
}

/// Whether `view` is a tensor we transcode, and its dense size is within
/// `limit`.
fn can_transcode(view: &TensorView<'_>, limit: u64) -> bool {
    let dense = matches!(
        view.layout(),
        Layout::RowMajor | Layout::ColumnMajor | Layout::Strided(_)
    );
    let rank = view.shape().len();
    let size = element_bytes(view).and_then(|e| {
        view.shape()
            .iter()
            .try_fold(e, |a: u64, d| a.checked_mul(d))
    });
    dense
        && view.buffers().len() == 1
        && view.quantization().is_none()
        && view.shard().is_none()
        && !view.is_dynamic()
        && (1..=RANK).contains(&rank)
        && size.is_some_and(|s| s <= limit)
}

/// `view`'s tensor (its one buffer is `data`) in layout `to` (row-major or
/// column-major): the new descriptor and data. `None` when it cannot be
/// transcoded (checked by [`choose`] first).
pub(crate) fn transcode(view: &TensorView<'_>, data: &[u8], to: u8) -> Option<(Vec<u8>, Vec<u8>)> {
    let row_major = match to {
        0x01 => true,
        0x02 => false,
        _ => return None,
    };
    let e = element_bytes(view)?;
    let shape: Vec<u64> = view.shape().iter().collect();
    let rank = shape.len();
    let mut strides = vec![0i64; rank];
    view.strides(&mut strides)?;
    let eb = usize::try_from(e).ok()?;
    let count = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))?;
    let mut out = Vec::with_capacity(usize::try_from(count.checked_mul(e)?).ok()?);
    if count > 0 {
        // Visit the elements in the target's order: the last axis fastest
        // for row-major, the first for column-major.
        let order: Vec<usize> = if row_major {
            (0..rank).rev().collect()
        } else {
            (0..rank).collect()
        };
        let base = i64::try_from(view.byte_offset()).ok()?;
        let step: Vec<i64> = strides
            .iter()
            .map(|s| s.checked_mul(i64::try_from(e).ok()?))
            .collect::<Option<_>>()?;
        let mut index = vec![0u64; rank];
        let mut at = base;
        for _ in 0..count {
            let lo = usize::try_from(at).ok()?;
            out.extend_from_slice(data.get(lo..lo.checked_add(eb)?)?);
            // Advance the odometer in the target's order.
            for &axis in &order {
                index[axis] += 1;
                at = at.checked_add(step[axis])?;
                if index[axis] < shape[axis] {
                    break;
                }
                let back = i64::try_from(shape[axis]).ok()?.checked_mul(step[axis])?;
                at = at.checked_sub(back)?;
                index[axis] = 0;
            }
        }
    }
    let mut b = crate::shard::dense_builder(view, &shape, row_major, out.len() as u64)?;
    b.set_statistics(view.statistics());
    b.set_extension_type(view.extension_type());
    let mut d = vec![0u8; 4096];
    let n = b.encode(&mut d).ok()?;
    d.truncate(n);
    Some((d, out))
}
