//! A tiny JSON writer: the viewer's answers are small objects of strings,
//! numbers and arrays, not worth a serializer crate in the wasm module.

use std::fmt::Write;

/// Appends `s` as a JSON string literal.
pub fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends a number; non-finite ones (not JSON) as `null`.
pub fn number(out: &mut String, v: f64) {
    if v.is_finite() {
        let _ = write!(out, "{v}");
    } else {
        out.push_str("null");
    }
}

/// `{"error": {"kind": …, "offset": …, "text": …}}`.
#[must_use]
pub fn error(kind: &str, offset: u64, text: &str) -> String {
    let mut o = String::from("{\"error\":{\"kind\":");
    string(&mut o, kind);
    let _ = write!(o, ",\"offset\":{offset},\"text\":");
    string(&mut o, text);
    o.push_str("}}");
    o
}

/// The first word of a `Debug` rendering: an error kind's variant name.
#[must_use]
pub fn variant(debug: &str) -> &str {
    let end = debug
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .unwrap_or(debug.len());
    debug.get(..end).unwrap_or(debug)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_are_escaped() {
        let mut o = String::new();
        string(&mut o, "a\"b\\c\n\u{1}");
        assert_eq!(o, r#""a\"b\\c\n\u0001""#);
    }

    #[test]
    fn variant_is_the_first_word() {
        assert_eq!(variant("BadMagic([0, 1])"), "BadMagic");
        assert_eq!(variant("Truncated { needed: 3 }"), "Truncated");
        assert_eq!(variant("Plain"), "Plain");
    }
}
