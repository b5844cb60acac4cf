//! Opaque pagination cursors.
//!
//! A cursor carries only the caller-independent part of the last key read (a job id, a
//! scheduled instant): the API rebuilds the full `ExclusiveStartKey` from the *caller's*
//! tenant. A cursor copied from another tenant's response therefore pages through the
//! caller's own items, never another's, and a forged cursor is at worst a 400.
//!
//! The encoding is hex of `v1|{kind}|{value}`: opaque enough that clients do not build them,
//! with a kind so a jobs cursor is refused by the executions list.

use super::ControlError;

/// One page of a list.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// The items, in the list's order.
    pub items: Vec<T>,
    /// Pass back to get the next page; `None` on the last page.
    pub next: Option<String>,
}

/// The longest cursor accepted (characters; cursors are lowercase hex).
pub const MAX_CURSOR_LEN: usize = 1_024;

/// Encodes a cursor of `kind` holding `value`.
pub fn encode(kind: &str, value: &str) -> String {
    format!("v1|{kind}|{value}").bytes().map(|b| format!("{b:02x}")).collect()
}

/// Decodes a cursor of `kind`; any other input is a validation error on `cursor`.
pub fn decode(kind: &str, cursor: &str) -> Result<String, ControlError> {
    let bad = || ControlError::invalid("cursor", "not a cursor returned by this list");
    // Bytes, not `&str` slices: a multi-byte character must be refused, not sliced through.
    let raw = cursor.as_bytes();
    if !raw.len().is_multiple_of(2) || raw.len() > MAX_CURSOR_LEN {
        return Err(bad());
    }
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let bytes: Option<Vec<u8>> = raw.chunks_exact(2).map(|p| Some(hex(p[0])? << 4 | hex(p[1])?)).collect();
    let text = String::from_utf8(bytes.ok_or_else(bad)?).map_err(|_| bad())?;
    let rest = text.strip_prefix("v1|").ok_or_else(bad)?;
    let (k, v) = rest.split_once('|').ok_or_else(bad)?;
    if k != kind || v.is_empty() {
        return Err(bad());
    }
    Ok(v.to_string())
}

/// Clamps a requested page size to `1..=max` (default 50).
pub fn limit(requested: Option<u32>, max: u32) -> i32 {
    requested.unwrap_or(50).clamp(1, max.max(1)) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_other_kinds_and_junk() {
        let c = encode("jobs", "nightly-1");
        assert_eq!(decode("jobs", &c).unwrap(), "nightly-1");
        assert!(decode("execs", &c).is_err(), "a jobs cursor is not an executions cursor");
        for junk in ["", "zz", "abc", "é", "aéb", "0é0", "+1", &encode("jobs", "")] {
            match decode("jobs", junk) {
                Err(ControlError::Invalid(v)) => assert_eq!(v.field, "cursor"),
                other => panic!("{junk:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn page_sizes_are_clamped() {
        assert_eq!(limit(None, 100), 50);
        assert_eq!(limit(Some(0), 100), 1);
        assert_eq!(limit(Some(1_000), 100), 100);
    }
}
