//! Business calendars: write (create or a new version), read, read a version, delete.

use super::request::{enc, Call};
use super::Client;
use crate::error::Error;
use crate::types::{BusinessCalendar, BusinessCalendarChange, BusinessCalendarSpec, DeletedCalendar};
use hyper::Method;

impl Client {
    /// `PUT /v1/calendars/{calendarId}`: creates it (`version` `None`), or writes a new version
    /// if it is still at `version` (412 otherwise).
    pub async fn put_calendar(
        &self,
        calendar_id: &str,
        definition: &BusinessCalendarSpec,
        version: Option<u64>,
    ) -> Result<BusinessCalendarChange, Error> {
        let call = Call::new(Method::PUT, format!("/v1/calendars/{}", enc(calendar_id))).json(definition)?;
        self.execute(call.if_match(version)).await
    }

    /// `GET /v1/calendars/{calendarId}`.
    pub async fn get_calendar(&self, calendar_id: &str) -> Result<BusinessCalendar, Error> {
        self.execute(Call::new(Method::GET, format!("/v1/calendars/{}", enc(calendar_id)))).await
    }

    /// `GET /v1/calendars/{calendarId}/versions/{version}`.
    pub async fn get_calendar_version(
        &self,
        calendar_id: &str,
        version: u64,
    ) -> Result<BusinessCalendar, Error> {
        self.execute(Call::new(Method::GET, format!("/v1/calendars/{}/versions/{version}", enc(calendar_id))))
            .await
    }

    /// `DELETE /v1/calendars/{calendarId}` (409 while a job or calendar uses it).
    pub async fn delete_calendar(
        &self,
        calendar_id: &str,
        version: Option<u64>,
    ) -> Result<DeletedCalendar, Error> {
        self.execute(
            Call::new(Method::DELETE, format!("/v1/calendars/{}", enc(calendar_id))).if_match(version),
        )
        .await
    }
}
