//! The operations log, and lists.

use crate::time;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use utoipa::openapi::{RefOr, Schema};
use utoipa::ToSchema;

/// An operations-log entry: who changed what, when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    /// When.
    #[serde(serialize_with = "time::one")]
    pub at: DateTime<Utc>,
    /// Who (`api:{principal}`, `reconciler`, ...).
    pub actor: String,
    /// `create`, `update`, `pause`, `resume`, `delete`, `trigger`, `backfill`, `cancel`,
    /// `replay`, `fire_missed`, `calendar_create`, `calendar_update`, `calendar_delete`, `event_rejected` (a string,
    /// so that a client reads actions added later).
    #[schema(example = "pause")]
    pub action: String,
    /// The job (for calendar actions, the calendar).
    pub job_id: String,
    /// The version before.
    #[schema(required = true)]
    pub from_version: Option<u64>,
    /// The version after.
    #[schema(required = true)]
    pub to_version: Option<u64>,
    /// The execution concerned.
    #[schema(required = true)]
    pub execution_id: Option<String>,
    /// Detail (a replay's reason, a missed fire's lateness).
    #[schema(required = true)]
    pub detail: Option<String>,
}

/// One page of a list: its items and the cursor of the next page (`null` on the last). Its
/// schema is `{Item}Page`, with the items as references to the item's own schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    /// The items.
    pub items: Vec<T>,
    /// Pass as `cursor` for the next page; `null` on the last.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    /// A page of `items`, followed by `next_cursor`.
    pub fn new(items: Vec<T>, next_cursor: Option<String>) -> Self {
        Page { items, next_cursor }
    }
}

impl<T: ToSchema> utoipa::PartialSchema for Page<T> {
    fn schema() -> RefOr<Schema> {
        use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
        let items = ArrayBuilder::new().items(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(T::name())));
        let cursor = ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::SchemaType::from_iter([Type::String, Type::Null]))
            .description(Some("Pass as `cursor` for the next page; `null` on the last."));
        let page = ObjectBuilder::new()
            .description(Some(format!("One page of {}s, and the cursor of the next page.", T::name())))
            .property("items", items)
            .property("nextCursor", cursor)
            .required("items")
            .required("nextCursor");
        RefOr::T(Schema::Object(page.build()))
    }
}

impl<T: ToSchema> ToSchema for Page<T> {
    fn name() -> Cow<'static, str> {
        Cow::Owned(format!("{}Page", T::name()))
    }
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((T::name().into_owned(), T::schema()));
        T::schemas(schemas);
    }
}

/// A page of jobs (`JobPage` in the document).
pub type JobPage = Page<crate::Job>;
/// A page of executions.
pub type ExecutionPage = Page<crate::Execution>;
/// A page of operations-log entries.
pub type OperationPage = Page<Operation>;
/// A page of business calendars.
pub type BusinessCalendarPage = Page<crate::BusinessCalendar>;
/// A page of resource limits.
pub type ResourceLimitPage = Page<crate::ResourceLimit>;
