//! UUIDs in text, and their 12-hex prefixes: the one rule shared by `measure`'s `uuid_prefix`
//! what-if and the proxy's `uuid_prefix` option.
//!
//! A UUID is 36 ASCII characters `8-4-4-4-12` of hex digits (either case) with dashes at byte
//! offsets 8, 13, 18 and 23 (RFC 9562 §4's textual form; any version or variant), not
//! preceded or followed by an ASCII letter or digit, so hex runs inside longer ids are left
//! alone. Its prefix is its first 12 hex digits, lowercased, without the dash:
//! `3F2B8C1E-9A4D-4E7B-8C2F-1D5E6A7B8C9D` → `3f2b8c1e9a4d`. That keeps 48 bits of the id (a
//! collision needs ~16 million ids) at about a third of its tokens.
//!
//! ```
//! use mcp_budget_core::uuid;
//! let text = "owner 3F2B8C1E-9A4D-4E7B-8C2F-1D5E6A7B8C9D, short 3f2b8c1e9a4d.";
//! let starts: Vec<usize> = uuid::uuid_starts(text).collect();
//! assert_eq!(starts, [6]);
//! assert_eq!(uuid::prefix_of(&text[6..42]), "3f2b8c1e9a4d");
//! assert_eq!(uuid::prefix_starts(text).collect::<Vec<_>>(), [50]);
//! ```

/// Length in bytes of a textual UUID.
pub const UUID_LEN: usize = 36;

/// Length in bytes of a UUID's prefix (12 hex digits).
pub const PREFIX_LEN: usize = 12;

fn clean_before(b: &[u8], i: usize) -> bool {
    i == 0 || b.get(i - 1).is_none_or(|c| !c.is_ascii_alphanumeric())
}

fn clean_after(b: &[u8], end: usize) -> bool {
    b.get(end).is_none_or(|c| !c.is_ascii_alphanumeric())
}

/// Whether `b[i..i + 36]` is a UUID with clean boundaries (see the module docs).
pub fn is_uuid_at(b: &[u8], i: usize) -> bool {
    let Some(w) = i.checked_add(UUID_LEN).and_then(|end| b.get(i..end)) else {
        return false;
    };
    let shape_ok = w.iter().enumerate().all(|(k, &c)| match k {
        8 | 13 | 18 | 23 => c == b'-',
        _ => c.is_ascii_hexdigit(),
    });
    shape_ok && clean_before(b, i) && clean_after(b, i + UUID_LEN)
}

/// The byte offsets where UUIDs start in `text`, in order, never overlapping. Every byte of a
/// UUID is ASCII, so each offset and offset + [`UUID_LEN`] are char boundaries.
pub fn uuid_starts(text: &str) -> impl Iterator<Item = usize> + '_ {
    let b = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i + UUID_LEN <= b.len() {
            // A UUID has a dash at offset 8: jump from dash to dash.
            let dash = memchr_dash(&b[i + 8..])?;
            let start = i + dash;
            if start + UUID_LEN > b.len() {
                return None;
            }
            if is_uuid_at(b, start) {
                i = start + UUID_LEN;
                return Some(start);
            }
            i = start + 1;
        }
        None
    })
}

fn memchr_dash(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'-')
}

/// The prefix of a UUID (its first 12 hex digits, lowercased, without the dash). `uuid`
/// must be one ([`is_uuid_at`]); anything shorter gives what it has.
pub fn prefix_of(uuid: &str) -> String {
    uuid.bytes()
        .filter(u8::is_ascii_hexdigit)
        .take(PREFIX_LEN)
        .map(|c| char::from(c.to_ascii_lowercase()))
        .collect()
}

/// The byte offsets in `text` of runs of exactly 12 hex digits with clean boundaries (as a
/// UUID's: no ASCII letter or digit on either side) that are not part of a UUID: where a
/// prefix written back by a model can be. In order, never overlapping.
pub fn prefix_starts(text: &str) -> impl Iterator<Item = usize> + '_ {
    let b = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < b.len() {
            if is_uuid_at(b, i) {
                i += UUID_LEN;
                continue;
            }
            if !b[i].is_ascii_alphanumeric() {
                i += 1;
                continue;
            }
            // A run of letters and digits starts at `i` (its left side is clean).
            let run = b[i..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric())
                .count();
            let start = i;
            i += run;
            if run == PREFIX_LEN && b[start..start + run].iter().all(u8::is_ascii_hexdigit) {
                return Some(start);
            }
        }
        None
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_uuids_with_clean_boundaries_only() {
        let t = "a 3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d b x3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d \
                 3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9dz 00000000-0000-0000-0000-000000000001";
        let starts: Vec<usize> = uuid_starts(t).collect();
        assert_eq!(starts.len(), 2, "{starts:?}");
        assert_eq!(&t[starts[0]..starts[0] + 4], "3f2b");
        assert_eq!(&t[starts[1]..starts[1] + 8], "00000000");
        assert_eq!(uuid_starts("short").count(), 0);
        assert_eq!(
            uuid_starts("3f2b8c1e-9a4d-4e7b-8c2f_1d5e6a7b8c9d").count(),
            0
        );
        // Adjacent UUIDs joined by a dash are both found.
        let two = "3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d-3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d";
        assert_eq!(uuid_starts(two).collect::<Vec<_>>(), [0, 37]);
    }

    #[test]
    fn prefixes_are_twelve_bounded_hex_digits_outside_uuids() {
        let t = "3f2b8c1e9a4d, x3f2b8c1e9a4d, 3f2b8c1e9a4d0, 3F2B8C1E9A4D/ \
                 3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d g3f2b8c1e9a4";
        let found: Vec<&str> = prefix_starts(t).map(|s| &t[s..s + PREFIX_LEN]).collect();
        assert_eq!(found, ["3f2b8c1e9a4d", "3F2B8C1E9A4D"]);
        assert_eq!(prefix_starts("é3f2b8c1e9a4d東").count(), 1);
    }

    #[test]
    fn prefix_is_lowercase_without_the_dash() {
        assert_eq!(
            prefix_of("3F2B8C1E-9A4D-4E7B-8C2F-1D5E6A7B8C9D"),
            "3f2b8c1e9a4d"
        );
    }
}
