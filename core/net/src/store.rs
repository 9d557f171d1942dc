//! Where pushed tensors go: one `.hrry` file per key in the store
//! directory, named by [`key_to_file_name`].

/// The longest escaped file name (without `.hrry`) a key may map to.
pub const MAX_STORED_NAME: usize = 200;

/// The file name (without directory) a key is stored under: every byte
/// outside `[A-Za-z0-9_-]`, and a `.` anywhere, written as `%XX`, then
/// `.hrry`. The result has no path separator, does not start with a dot,
/// and is never `.` or `..`: a key cannot name a path outside the store.
/// `None` when the name would exceed [`MAX_STORED_NAME`] bytes.
///
/// ```
/// use hurray_net::key_to_file_name;
/// assert_eq!(key_to_file_name("layer0.weight").unwrap(), "layer0%2Eweight.hrry");
/// assert_eq!(key_to_file_name("../../etc/passwd").unwrap(), "%2E%2E%2F%2E%2E%2Fetc%2Fpasswd.hrry");
/// assert_eq!(key_to_file_name("/abs").unwrap(), "%2Fabs.hrry");
/// ```
#[must_use]
pub fn key_to_file_name(key: &str) -> Option<String> {
    let mut out = String::with_capacity(key.len() + 5);
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 15)]));
        }
        if out.len() > MAX_STORED_NAME {
            return None;
        }
    }
    if out.is_empty() {
        return None;
    }
    out.push_str(".hrry");
    Some(out)
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";
