//! The operations audit log.

use super::Cx;
use crate::dto;
use crate::router::{ok, Res};
use sundial_core::control;

/// `GET /v1/operations`, optionally for one `jobId`.
pub(crate) async fn list(cx: &Cx<'_>) -> Res {
    let q = &cx.q;
    let page = control::ops::list(cx.ctl, cx.caller, q.id("jobId")?, q.limit()?, q.str("cursor")).await?;
    ok(dto::page(page.items.iter().map(dto::ops).collect(), page.next))
}
