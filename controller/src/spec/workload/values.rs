//! One `[load.values]` entry read by hand (a list of strings or a range of whole numbers), and what a path may hold.

/// One `[load.values]` entry: a list of strings, or a range of whole numbers `{ from, to }`.
pub(super) enum RawValues {
    List(Vec<String>),
    Range { from: u64, to: u64 },
}

/// The two shapes an entry may have, said in every error about one.
pub(super) const VALUES_SHAPES: &str = r#"expected a list of strings (["A1", "B2"]) or a range of whole numbers ({ from = 1, to = 9 })"#;

impl RawValues {
    pub(super) fn from_value(value: &toml::Value) -> Result<RawValues, String> {
        match value {
            toml::Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| match item {
                    toml::Value::String(text) => Ok(text.clone()),
                    other => Err(format!("[{i}] is {}, not a string", other.type_str())),
                })
                .collect::<Result<_, _>>()
                .map(RawValues::List),
            toml::Value::Table(table) => {
                if let Some(unknown) = table
                    .keys()
                    .find(|key| !["from", "to"].contains(&key.as_str()))
                {
                    return Err(format!("`{unknown}` is not `from` or `to`"));
                }
                let bound = |key: &str| match table.get(key) {
                    None => Err(format!("`{key}` is missing")),
                    Some(toml::Value::Integer(n)) => {
                        u64::try_from(*n).map_err(|_| format!("`{key}` = {n} is below 0"))
                    }
                    Some(other) => Err(format!(
                        "`{key}` is {}, not a whole number",
                        other.type_str()
                    )),
                };
                Ok(RawValues::Range {
                    from: bound("from")?,
                    to: bound("to")?,
                })
            }
            other => Err(format!("found {}", other.type_str())),
        }
    }
}

/// Whether `value` may be put into a request path as it is: only what a request target holds unescaped
/// (RFC 3986's unreserved and sub-delimiter characters, `:`, `@`, `/`, `?`) and well-formed `%XX` escapes.
pub(super) fn fits_a_path(value: &str) -> bool {
    let bytes = value.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let escaped = bytes.get(i + 1..i + 3);
                if !escaped.is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit)) {
                    return false;
                }
                i += 3;
                continue;
            }
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => {}
            b'-' | b'.' | b'_' | b'~' | b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+'
            | b',' | b';' | b'=' | b':' | b'@' | b'/' | b'?' => {}
            _ => return false,
        }
        i += 1;
    }
    true
}
