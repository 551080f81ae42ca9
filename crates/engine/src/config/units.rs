//! Sizes and durations as the command line and the environment spell them.

use std::time::Duration;

/// Parses a size in bytes: an integer, optionally followed by `K`, `M`, `G` (powers of 1024,
/// case-insensitive, with or without `iB`/`B`): `268435456`, `256MiB`, `256m`, `1G`.
///
/// # Errors
/// A message naming the accepted forms, for anything else or an overflow.
pub fn parse_bytes(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let (n, unit) = t.split_at(digits);
    let n: usize = n
        .parse()
        .map_err(|_| format!("{text:?} is not a size (like 268435456, 256MiB, 1G)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => {
            return Err(format!(
                "{text:?} is not a size (like 268435456, 256MiB, 1G)"
            ));
        }
    };
    n.checked_mul(1usize << shift)
        .ok_or_else(|| format!("{text:?} is too large"))
}

/// Parses a duration: an integer of seconds, optionally followed by `s`, `m`, `h` or `d`:
/// `3600`, `90s`, `15m`, `24h`, `7d`.
///
/// # Errors
/// A message naming the accepted forms, for anything else or an overflow.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    let (n, unit) = t.split_at(digits);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (like 3600, 90s, 15m, 24h, 7d)"))?;
    let secs = match unit.trim() {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => {
            return Err(format!(
                "{text:?} is not a duration (like 3600, 90s, 15m, 24h, 7d)"
            ));
        }
    };
    n.checked_mul(secs)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("{text:?} is too long"))
}
