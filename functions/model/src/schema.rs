//! Schemas of list fields whose items carry a pattern or whose entries must be distinct
//! (`uniqueItems` comes from utoipa only for set types), for the definitions' `schema_with`.
//! Below the definitions: it needs their limits, never the definitions themselves.

use sundial_schedule::openapi::{pattern_strings, ID_PATTERN};
use utoipa::openapi::schema::Array;

use crate::limits::{MAX_CHILDREN, MAX_JOB_RESOURCES};

/// A job's `resources`: distinct ids, at most [`MAX_JOB_RESOURCES`].
pub(crate) fn resources() -> Array {
    pattern_strings(ID_PATTERN, None)
        .max_items(Some(MAX_JOB_RESOURCES))
        .unique_items(true)
        .description(Some(
            "Platform-wide resource limits its runs use (`[\"legacy-db\"]`, docs/resources.md): an \
             execution starts only holding a unit of each (taken all or none), and gives them back \
             when its attempt ends. Each must name a limit an operator defined (`PUT \
             /v1/resources/{resource}`), else 400 on `resources[i]`; none twice. Absent: none.",
        ))
        .build()
}

/// A broadcast's `members`: 1 to [`MAX_CHILDREN`] distinct ids.
pub(crate) fn members() -> Array {
    pattern_strings(ID_PATTERN, None)
        .min_items(Some(1))
        .max_items(Some(MAX_CHILDREN as usize))
        .unique_items(true)
        .build()
}
