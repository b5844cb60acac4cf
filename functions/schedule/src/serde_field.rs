//! Serde field helpers shared by every definition type (schedules, calendars, jobs).

/// `deserialize_with` for an optional field that may be absent but never `null`: absent is the
/// default (`#[serde(default)]`), an explicit `null` is a type error naming the field, so a
/// client cannot clear a setting by accident.
pub fn not_null<'de, D: serde::Deserializer<'de>, T: serde::Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}
