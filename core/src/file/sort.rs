//! A heapsort over a caller's slots: in place, O(n log n) worst
//! case, no recursion, no allocation, and no panic path (every access is
//! checked; `core`'s sorts may panic on an inconsistent order, which the
//! link-time no-panic proof cannot rule out).

use core::cmp::Ordering;

/// Sorts `v` ascending by `cmp`.
pub(crate) fn heapsort<T: Copy>(v: &mut [T], mut cmp: impl FnMut(T, T) -> Ordering) {
    let n = v.len();
    let mut start = n / 2;
    while start > 0 {
        start = start.saturating_sub(1);
        sift_down(v, start, n, &mut cmp);
    }
    let mut end = n;
    while end > 1 {
        end = end.saturating_sub(1);
        swap(v, 0, end);
        sift_down(v, 0, end, &mut cmp);
    }
}

fn sift_down<T: Copy>(
    v: &mut [T],
    mut root: usize,
    end: usize,
    cmp: &mut impl FnMut(T, T) -> Ordering,
) {
    loop {
        let Some(mut child) = root.checked_mul(2).and_then(|c| c.checked_add(1)) else {
            return;
        };
        if child >= end {
            return;
        }
        let right = child.saturating_add(1);
        if right < end {
            if let (Some(&a), Some(&b)) = (v.get(child), v.get(right)) {
                if cmp(a, b) == Ordering::Less {
                    child = right;
                }
            }
        }
        let (Some(&r), Some(&c)) = (v.get(root), v.get(child)) else {
            return;
        };
        if cmp(r, c) != Ordering::Less {
            return;
        }
        swap(v, root, child);
        root = child;
    }
}

/// `v.swap(a, b)` with the bounds check in sight of the optimizer.
const fn swap<T>(v: &mut [T], a: usize, b: usize) {
    if a < v.len() && b < v.len() {
        v.swap(a, b);
    }
}
