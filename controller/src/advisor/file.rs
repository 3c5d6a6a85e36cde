//! The one capped read of every file the advisor takes: its input, a current config, a library's file.

use std::io::Read;
use std::path::Path;

/// Largest input, current config or library file read (a config is a few hundred bytes).
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// Read a text file of at most [`MAX_FILE_BYTES`], the cap checked while reading.
pub fn read_capped(path: &Path) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("longer than {MAX_FILE_BYTES} bytes"),
        ));
    }
    Ok(text)
}
