//! The one Query pager: every Query of the store reads its pages through [`Pager`], which
//! sends a configured request, hands back each page's items, and follows `LastEvaluatedKey`
//! until the partition (or key range) ends.
//!
//! A caller that wants every item reads [`Pager::all`]; one that stops early (at the first
//! match, after `N` items or `K` pages) or acts on each page before the next is read loops on
//! [`Pager::next`] (or [`Pager::next_limited`], a page of another size); one that returns a
//! page and a cursor reads one [`Page`] and keeps its raw [`Page::last_key`].

use super::error::StoreError;
use super::items::Item;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;

/// One page of a Query: its items, and the `LastEvaluatedKey` as the service returned it
/// (`None`: the last page).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Page {
    /// The items, in the Query's order.
    pub(crate) items: Vec<Item>,
    /// Where the next page starts, as returned.
    pub(crate) last_key: Option<Item>,
}

/// The pages of one Query, read one at a time.
#[derive(Debug)]
pub(crate) struct Pager {
    query: QueryFluentBuilder,
    op: &'static str,
    /// The `ExclusiveStartKey` of the next page (`None` on the first page: from the start).
    start: Option<Item>,
    done: bool,
}

impl Pager {
    /// The pages of `query` (table, index, expressions, limit and order already set), from
    /// `start` (`None`: the beginning); `op` names it in errors.
    pub(crate) fn new(query: QueryFluentBuilder, start: Option<Item>, op: &'static str) -> Self {
        Pager { query, op, start, done: false }
    }

    /// The next page (`None` once the last one was read). A page whose `LastEvaluatedKey` is
    /// absent or empty is the last.
    pub(crate) async fn next(&mut self) -> Result<Option<Page>, StoreError> {
        self.read(None).await
    }

    /// [`Pager::next`], reading at most `limit` items for this page.
    pub(crate) async fn next_limited(&mut self, limit: i32) -> Result<Option<Page>, StoreError> {
        self.read(Some(limit)).await
    }

    async fn read(&mut self, limit: Option<i32>) -> Result<Option<Page>, StoreError> {
        if self.done {
            return Ok(None);
        }
        let mut q = self.query.clone();
        if let Some(l) = limit {
            q = q.limit(l);
        }
        let out = q
            .set_exclusive_start_key(self.start.take())
            .send()
            .await
            .map_err(|e| StoreError::from_sdk(self.op, e))?;
        let page = Page { items: out.items.unwrap_or_default(), last_key: out.last_evaluated_key };
        match &page.last_key {
            Some(k) if !k.is_empty() => self.start = Some(k.clone()),
            _ => self.done = true,
        }
        Ok(Some(page))
    }

    /// Every item of every page, each decoded by `decode` (the first error stops the read).
    pub(crate) async fn all<T, E>(
        mut self,
        decode: impl Fn(&Item) -> Result<T, E>,
    ) -> Result<Vec<T>, StoreError>
    where
        StoreError: From<E>,
    {
        let mut found = Vec::new();
        while let Some(page) = self.next().await? {
            for item in &page.items {
                found.push(decode(item)?);
            }
        }
        Ok(found)
    }
}

/// One page of `query` from `start`: the page-and-cursor reads (a listing's page).
pub(crate) async fn one_page(
    query: QueryFluentBuilder,
    start: Option<Item>,
    op: &'static str,
) -> Result<Page, StoreError> {
    Ok(Pager::new(query, start, op).next().await?.unwrap_or_default())
}
