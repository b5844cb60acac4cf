//! The paging flags every list takes, and reading one page or every page.

use serde::Serialize;
use serde_json::{json, Value};
use sundial_client::{Client, ListRequest};

/// `--limit`, `--cursor`, `--all` of every list.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct Paging {
    /// Page size (1-100; the API's default is 50).
    #[arg(long)]
    pub(crate) limit: Option<u32>,
    /// Continue from this cursor (the `nextCursor` of the previous page).
    #[arg(long)]
    pub(crate) cursor: Option<String>,
    /// Every page from the cursor on, following `nextCursor` to the end.
    #[arg(long)]
    pub(crate) all: bool,
}

/// One page of `req`, or with `--all` every page as one; as the API's JSON.
pub(crate) async fn list<R: ListRequest>(c: &Client, req: R, all: bool) -> anyhow::Result<Value>
where
    R::Item: Serialize,
{
    if all {
        let items = c.all(req).await?;
        Ok(json!({"items": items, "nextCursor": null}))
    } else {
        Ok(serde_json::to_value(c.page(&req).await?)?)
    }
}
