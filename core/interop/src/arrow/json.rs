//! An allocation-free reader for the extension metadata of
//! `arrow.fixed_shape_tensor`: a JSON object with `"shape"` (required, an
//! array of non-negative integers), `"permutation"` (optional, integers)
//! and `"dim_names"` (optional, strings; skipped). Any other key's value is
//! skipped (nesting up to 16 levels). Duplicate known keys, trailing bytes
//! and malformed JSON are errors; nothing is allocated and every index is
//! checked.

use crate::error::ImportError;

/// The most dimensions a tensor element may have (one of the 32 is the
/// batch dimension).
pub(crate) const MAX_ELEMENT_DIMS: usize = crate::MAX_NDIM - 1;

/// What the metadata says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TensorMetadata {
    pub(crate) ndim: usize,
    pub(crate) shape: [u64; MAX_ELEMENT_DIMS],
    /// `None`: identity.
    pub(crate) permutation: Option<[u64; MAX_ELEMENT_DIMS]>,
    pub(crate) permutation_len: usize,
}

const fn bad(what: &'static str) -> ImportError {
    ImportError::Metadata { what }
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), ImportError> {
        if self.eat(c) {
            Ok(())
        } else {
            Err(bad("malformed JSON"))
        }
    }

    /// A string; returns its raw bytes (escapes left in place).
    fn string(&mut self) -> Result<&'a [u8], ImportError> {
        self.expect(b'"')?;
        let start = self.i;
        loop {
            match self.peek() {
                None => return Err(bad("unterminated JSON string")),
                Some(b'"') => break,
                Some(b'\\') => self.i += 2,
                Some(_) => self.i += 1,
            }
        }
        let s: &'a [u8] = self.s;
        let raw = s.get(start..self.i).ok_or(bad("malformed JSON"))?;
        self.i += 1;
        Ok(raw)
    }

    fn integer(&mut self) -> Result<u64, ImportError> {
        self.ws();
        let mut value: u64 = 0;
        let mut digits = 0;
        while let Some(c @ b'0'..=b'9') = self.peek() {
            value = value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(c - b'0')))
                .ok_or(bad("integer out of range"))?;
            digits += 1;
            self.i += 1;
        }
        if digits == 0 {
            return Err(bad("expected a non-negative integer"));
        }
        Ok(value)
    }

    fn int_array(&mut self, out: &mut [u64; MAX_ELEMENT_DIMS]) -> Result<usize, ImportError> {
        self.expect(b'[')?;
        let mut n = 0;
        if self.eat(b']') {
            return Ok(0);
        }
        loop {
            let v = self.integer()?;
            *out.get_mut(n).ok_or(bad("more than 31 dimensions"))? = v;
            n += 1;
            if self.eat(b']') {
                return Ok(n);
            }
            self.expect(b',')?;
        }
    }

    fn skip_value(&mut self, depth: u32) -> Result<(), ImportError> {
        if depth > 16 {
            return Err(bad("JSON nested too deeply"));
        }
        self.ws();
        match self.peek() {
            Some(b'"') => self.string().map(|_| ()),
            Some(b'[') => {
                self.i += 1;
                if self.eat(b']') {
                    return Ok(());
                }
                loop {
                    self.skip_value(depth + 1)?;
                    if self.eat(b']') {
                        return Ok(());
                    }
                    self.expect(b',')?;
                }
            }
            Some(b'{') => {
                self.i += 1;
                if self.eat(b'}') {
                    return Ok(());
                }
                loop {
                    self.string()?;
                    self.expect(b':')?;
                    self.skip_value(depth + 1)?;
                    if self.eat(b'}') {
                        return Ok(());
                    }
                    self.expect(b',')?;
                }
            }
            Some(b't') => self.word(b"true"),
            Some(b'f') => self.word(b"false"),
            Some(b'n') => self.word(b"null"),
            Some(b'-' | b'0'..=b'9') => {
                while matches!(
                    self.peek(),
                    Some(b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9')
                ) {
                    self.i += 1;
                }
                Ok(())
            }
            _ => Err(bad("malformed JSON")),
        }
    }

    fn word(&mut self, w: &[u8]) -> Result<(), ImportError> {
        let end = self.i.checked_add(w.len()).ok_or(bad("malformed JSON"))?;
        if self.s.get(self.i..end) == Some(w) {
            self.i = end;
            Ok(())
        } else {
            Err(bad("malformed JSON"))
        }
    }
}

/// Parses the extension metadata.
pub(crate) fn parse(json: &[u8]) -> Result<TensorMetadata, ImportError> {
    let mut c = Cursor { s: json, i: 0 };
    let mut meta = TensorMetadata {
        ndim: 0,
        shape: [0; MAX_ELEMENT_DIMS],
        permutation: None,
        permutation_len: 0,
    };
    let mut has_shape = false;
    let mut has_names = false;
    c.expect(b'{')?;
    if !c.eat(b'}') {
        loop {
            let key = c.string()?;
            c.expect(b':')?;
            match key {
                b"shape" if !has_shape => {
                    meta.ndim = c.int_array(&mut meta.shape)?;
                    has_shape = true;
                }
                b"permutation" if meta.permutation.is_none() => {
                    let mut p = [0; MAX_ELEMENT_DIMS];
                    meta.permutation_len = c.int_array(&mut p)?;
                    meta.permutation = Some(p);
                }
                b"dim_names" if !has_names => {
                    has_names = true;
                    c.skip_value(0)?;
                }
                b"shape" | b"permutation" | b"dim_names" => return Err(bad("duplicate key")),
                _ => c.skip_value(0)?,
            }
            if c.eat(b'}') {
                break;
            }
            c.expect(b',')?;
        }
    }
    c.ws();
    if c.i != json.len() {
        return Err(bad("trailing bytes after the JSON object"));
    }
    if !has_shape {
        return Err(bad("no \"shape\""));
    }
    if let Some(p) = meta.permutation {
        if meta.permutation_len != meta.ndim {
            return Err(bad("permutation length differs from the shape's"));
        }
        // A permutation of 0..ndim: each value in range and seen once.
        let mut seen = 0u32;
        for &v in p.get(..meta.ndim).unwrap_or_default() {
            let bit = u32::try_from(v)
                .ok()
                .filter(|v| (*v as usize) < meta.ndim)
                .ok_or(bad("permutation value out of range"))?;
            if seen & (1 << bit) != 0 {
                return Err(bad("permutation repeats a dimension"));
            }
            seen |= 1 << bit;
        }
    }
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms() {
        let m = parse(br#"{"shape":[2,3]}"#).unwrap();
        assert_eq!(
            (m.ndim, &m.shape[..2], m.permutation),
            (2, &[2u64, 3][..], None)
        );
        let m = parse(br#" { "dim_names" : ["H", "W\"x"], "shape" : [ 4 , 5 ], "permutation": [1,0], "x": {"y": [null, true, -1.5e3]} } "#).unwrap();
        assert_eq!(&m.shape[..2], &[4, 5]);
        assert_eq!(&m.permutation.unwrap()[..2], &[1, 0]);
        assert_eq!(parse(br#"{"shape":[]}"#).unwrap().ndim, 0);
    }

    #[test]
    fn malformed_metadata_is_a_typed_error() {
        for bad_json in [
            &b""[..],
            b"{",
            br#"{"shape":[1,2}"#,
            br#"{"shape":[-1]}"#,
            br#"{"shape":[1]} x"#,
            br#"{"dim_names":[]}"#,
            br#"{"shape":[1],"shape":[2]}"#,
            br#"{"shape":[1,2],"permutation":[0,0]}"#,
            br#"{"shape":[1,2],"permutation":[0,2]}"#,
            br#"{"shape":[1,2],"permutation":[0]}"#,
            br#"{"shape":[99999999999999999999]}"#,
            br#"{"shape":[1],"x":[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}"#,
            br#"{"shape":[1],"x":"unterminated}"#,
            br#"{"shape":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0]}"#,
        ] {
            assert!(
                matches!(parse(bad_json), Err(ImportError::Metadata { .. })),
                "{}",
                String::from_utf8_lossy(bad_json)
            );
        }
    }
}
