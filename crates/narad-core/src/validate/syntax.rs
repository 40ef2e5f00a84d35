//! String syntaxes: type names, extension names and JSON Pointers (RFC 6901).

/// `^[a-z][a-z0-9]*(\.[a-z][a-z0-9]*)+$`
pub fn is_dotted_lowercase(ty: &str) -> bool {
    let mut segments = 0;
    for seg in ty.split('.') {
        let mut chars = seg.bytes();
        if !chars.next().is_some_and(|c| c.is_ascii_lowercase()) {
            return false;
        }
        if !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit()) {
            return false;
        }
        segments += 1;
    }
    segments >= 2
}

/// `^[a-z0-9]+(\.[a-z0-9]+)+$`
pub(crate) fn is_extension_name(name: &str) -> bool {
    let mut segments = 0;
    for seg in name.split('.') {
        if seg.is_empty()
            || !seg
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        {
            return false;
        }
        segments += 1;
    }
    segments >= 2
}

/// True for a JSON Pointer (RFC 6901): empty, or `/`-prefixed segments in
/// which `~` is followed by `0` or `1`.
pub fn is_json_pointer(p: &str) -> bool {
    if p.is_empty() {
        return true;
    }
    if !p.starts_with('/') {
        return false;
    }
    let b = p.as_bytes();
    b.iter()
        .enumerate()
        .all(|(i, c)| *c != b'~' || matches!(b.get(i + 1), Some(b'0' | b'1')))
}
