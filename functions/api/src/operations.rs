//! The operations a caller must be authenticated for, by handler: one `routes!` per path.
//!
//! Apart from the router ([`crate::app`]) because the document ([`crate::doc`]) reads them too,
//! and the router serves the document's own route: with the table in `app.rs`, the router and
//! the document would each import the other.

use crate::handlers::{calendars, dlq, executions, jobs, ops, pools, resource_limits, schedules};
use crate::Api;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The operations a caller must be authenticated for. One `routes!` per path.
pub(crate) fn operations() -> OpenApiRouter<Api> {
    OpenApiRouter::new()
        .routes(routes!(jobs::create_job, jobs::list_jobs))
        .routes(routes!(jobs::get_job, jobs::update_job, jobs::delete_job))
        .routes(routes!(jobs::pause_job))
        .routes(routes!(jobs::resume_job))
        .routes(routes!(jobs::get_job_version))
        .routes(routes!(jobs::list_job_versions))
        .routes(routes!(jobs::get_job_dependencies))
        .routes(routes!(executions::trigger_job))
        .routes(routes!(executions::backfill_job))
        .routes(routes!(executions::post_job_event))
        .routes(routes!(executions::list_job_executions))
        .routes(routes!(schedules::get_upcoming_fires))
        .routes(routes!(schedules::preview_schedule))
        .routes(routes!(schedules::tz_report))
        .routes(routes!(executions::list_executions))
        .routes(routes!(executions::get_execution))
        .routes(routes!(executions::cancel_execution))
        .routes(routes!(executions::list_execution_children))
        .routes(routes!(executions::get_execution_logs))
        .routes(routes!(dlq::list_dead_letters))
        .routes(routes!(dlq::replay_dead_letters))
        .routes(routes!(dlq::replay_dead_letter))
        .routes(routes!(ops::list_operations))
        .routes(routes!(calendars::list_calendars))
        .routes(routes!(calendars::put_calendar, calendars::get_calendar, calendars::delete_calendar))
        .routes(routes!(calendars::get_calendar_version))
        .routes(routes!(resource_limits::list_resources))
        .routes(routes!(pools::list_pools))
        .routes(routes!(
            resource_limits::put_resource,
            resource_limits::get_resource,
            resource_limits::delete_resource
        ))
}
