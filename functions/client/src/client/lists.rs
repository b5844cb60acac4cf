//! Any list, page by page: one page, a pager, or every item.
//!
//! Apart from `mod.rs` because the pager (`crate::page`) holds a [`Client`]: the client's own
//! file naming the pager too would make the two files import each other.

use super::request::Call;
use super::Client;
use crate::error::Error;
use crate::page::{ListRequest, Pager};
use crate::types::Page;
use hyper::Method;

impl Client {
    /// One page of any list.
    pub async fn page<R: ListRequest>(&self, req: &R) -> Result<Page<R::Item>, Error> {
        self.execute(Call::new(Method::GET, req.path_and_query())).await
    }

    /// A pager over any list, from `first`'s cursor (or the start).
    pub fn pages<R: ListRequest>(&self, first: R) -> Pager<R> {
        Pager::new(self.clone(), first)
    }

    /// Every item of a list, following `nextCursor` to the end.
    pub async fn all<R: ListRequest>(&self, first: R) -> Result<Vec<R::Item>, Error> {
        self.pages(first).collect_all().await
    }
}
