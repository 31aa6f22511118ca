//! Lists: a list read whole, a page at a time, or as a stream that fetches the pages as it goes; its items typed
//! ([`Tool`], [`Prompt`], [`Resource`], [`ResourceTemplate`], in `items.rs`) or as the server wrote them.

use std::collections::VecDeque;
use std::fmt;
use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::items::{ListItem, Prompt, Resource, ResourceTemplate, Tool};
use super::{Client, Error};
use crate::base::sync::Unpoisoned;

/// A page of a list.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Page<T = Value> {
    /// The items: typed ([`List::page`]), or as the server wrote them ([`Client::list_page`]).
    pub items: Vec<T>,
    /// Where the next page starts.
    pub next_cursor: Option<String>,
}

impl<T> Default for Page<T> {
    fn default() -> Self {
        Page { items: Vec::new(), next_cursor: None }
    }
}

/// One item of a page, typed; an item that cannot be read is left out, with a warning (its JSON is still in
/// [`Client::list_page`]'s pages).
fn typed<T: ListItem>(raw: Value) -> Option<T> {
    T::from_raw(raw).map_err(|e| tracing::warn!(method = T::METHOD, error = %e, "left out a list item")).ok()
}

/// A whole list, to `.await` (every item of every page), read a [`page`](List::page) at a time, or consume as a
/// [`stream`](List::stream) of items that fetches each page when the items before it are used up.
///
/// ```no_run
/// # #[allow(dead_code)]
/// # async fn run(client: mcp::client::Client) -> Result<(), mcp::client::Error> {
/// use mcp::client::{Resource, Tool};
///
/// let tools: Vec<Tool> = client.list::<Tool>().await?; // the same as client.list_tools()
/// let mut resources = client.list::<Resource>().stream();
/// while let Some(resource) = resources.next().await {
///     let resource = resource?;
///     println!("{} ({})", resource.display_name(), resource.uri);
///     if resource.uri.ends_with("/wanted") {
///         break; // the pages after this one are never asked for
///     }
/// }
/// # drop(tools); Ok(()) }
/// # fn main() {}
/// ```
///
/// In the 2026 era a page is kept for the `ttlMs` the server gave it and served from memory until then (a
/// list-changed notification drops the kept pages of its list); [`List::fresh`] asks the server every time.
#[must_use = "a list does nothing until it is awaited or read"]
pub struct List<T> {
    client: Client,
    fresh: bool,
    item: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for List<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("List").field("fresh", &self.fresh).finish_non_exhaustive()
    }
}

impl<T: ListItem> List<T> {
    /// Asks the server for every page, never serving one from the kept 2026 pages.
    pub fn fresh(mut self) -> Self {
        self.fresh = true;
        self
    }

    /// One page: the first (`None`), or the one a page's `next_cursor` points at.
    pub async fn page(&self, cursor: Option<&str>) -> Result<Page<T>, Error> {
        let page = self.client.list_page_with(T::METHOD, cursor, self.fresh).await?;
        Ok(Page { items: page.items.into_iter().filter_map(typed).collect(), next_cursor: page.next_cursor })
    }

    /// The pages, each fetched when the one before it has been taken.
    pub fn pages(self) -> PageStream<T> {
        PageStream::new(self.client, T::METHOD, self.fresh, typed::<T>)
    }

    /// The items, page after page: a page is fetched when the items before it are used up, so a reader that stops
    /// early never asks for the rest.
    pub fn stream(self) -> ItemStream<T> {
        ItemStream { pages: self.pages(), items: VecDeque::new() }
    }
}

impl<T: ListItem> IntoFuture for List<T> {
    type Output = Result<Vec<T>, Error>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<Vec<T>, Error>> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.pages().all_items())
    }
}

/// The next page to fetch, after the page at `cursor` pointed at `next`: none when it points nowhere or back at
/// itself (a server that repeats a cursor would otherwise be paged through for ever).
fn advance(cursor: &Option<String>, next: Option<String>) -> Option<String> {
    next.filter(|next| Some(next) != cursor.as_ref())
}

type PageFuture = Pin<Box<dyn Future<Output = Result<Page, Error>> + Send>>;

/// Where a [`PageStream`] is.
enum State {
    /// The page at this cursor (`None`: the first) is to be fetched.
    Next(Option<String>),
    /// The page at this cursor is being fetched.
    Fetching(Option<String>, PageFuture),
    /// The last page was taken, or fetching one failed.
    Done,
}

/// The pages of a list ([`List::pages`]), as a [`Stream`](futures_core::Stream): a page is asked for when it is
/// polled for, after the one before it was taken. A failed page is the last item.
#[must_use = "a stream does nothing until it is read"]
pub struct PageStream<T> {
    client: Client,
    method: &'static str,
    fresh: bool,
    item: fn(Value) -> Option<T>,
    state: State,
}

// Nothing is pinned structurally: the page being fetched is boxed.
impl<T> Unpin for PageStream<T> {}

impl<T> fmt::Debug for PageStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PageStream").field("method", &self.method).finish_non_exhaustive()
    }
}

impl<T> PageStream<T> {
    fn new(client: Client, method: &'static str, fresh: bool, item: fn(Value) -> Option<T>) -> PageStream<T> {
        PageStream { client, method, fresh, item, state: State::Next(None) }
    }

    /// The next page, `None` after the last. The same as the [`Stream`](futures_core::Stream)'s `next`, without a
    /// stream crate.
    pub async fn next(&mut self) -> Option<Result<Page<T>, Error>> {
        std::future::poll_fn(|cx| self.poll_page(cx)).await
    }

    fn poll_page(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Page<T>, Error>>> {
        loop {
            match std::mem::replace(&mut self.state, State::Done) {
                State::Done => return Poll::Ready(None),
                State::Next(cursor) => {
                    let (client, method, fresh, at) = (self.client.clone(), self.method, self.fresh, cursor.clone());
                    let fetch = async move { client.list_page_with(method, at.as_deref(), fresh).await };
                    self.state = State::Fetching(cursor, Box::pin(fetch));
                }
                State::Fetching(cursor, mut fetch) => match fetch.as_mut().poll(cx) {
                    Poll::Pending => {
                        self.state = State::Fetching(cursor, fetch);
                        return Poll::Pending;
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Some(Err(e))),
                    Poll::Ready(Ok(page)) => {
                        if let Some(next) = advance(&cursor, page.next_cursor.clone()) {
                            self.state = State::Next(Some(next));
                        }
                        let items = page.items.into_iter().filter_map(self.item).collect();
                        return Poll::Ready(Some(Ok(Page { items, next_cursor: page.next_cursor })));
                    }
                },
            }
        }
    }

    /// Every item of every page.
    async fn all_items(mut self) -> Result<Vec<T>, Error> {
        let mut items = Vec::new();
        while let Some(page) = self.next().await {
            items.extend(page?.items);
        }
        Ok(items)
    }
}

impl<T> futures_core::Stream for PageStream<T> {
    type Item = Result<Page<T>, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_page(cx)
    }
}

/// The items of a list ([`List::stream`]), as a [`Stream`](futures_core::Stream): the next page is asked for when
/// the items before it are used up. A failed page is the last item.
#[must_use = "a stream does nothing until it is read"]
pub struct ItemStream<T> {
    pages: PageStream<T>,
    items: VecDeque<T>,
}

impl<T> Unpin for ItemStream<T> {}

impl<T> fmt::Debug for ItemStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemStream").field("method", &self.pages.method).finish_non_exhaustive()
    }
}

impl<T> ItemStream<T> {
    /// The next item, `None` after the last. The same as the [`Stream`](futures_core::Stream)'s `next`, without a
    /// stream crate.
    pub async fn next(&mut self) -> Option<Result<T, Error>> {
        std::future::poll_fn(|cx| self.poll_item(cx)).await
    }

    fn poll_item(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<T, Error>>> {
        loop {
            if let Some(item) = self.items.pop_front() {
                return Poll::Ready(Some(Ok(item)));
            }
            match self.pages.poll_page(cx) {
                Poll::Ready(Some(Ok(page))) => self.items.extend(page.items),
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<T> futures_core::Stream for ItemStream<T> {
    type Item = Result<T, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_item(cx)
    }
}

impl Client {
    /// A whole list, typed ([`Tool`], [`Prompt`], [`Resource`], [`ResourceTemplate`]): `.await` it for every
    /// item, or read it by [`page`](List::page), or as a [`stream`](List::stream) that pages lazily.
    pub fn list<T: ListItem>(&self) -> List<T> {
        List { client: self.clone(), fresh: false, item: PhantomData }
    }

    /// Every tool (every page of `tools/list`).
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        self.list().await
    }

    /// Every prompt.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, Error> {
        self.list().await
    }

    /// Every resource.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, Error> {
        self.list().await
    }

    /// Every resource template.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, Error> {
        self.list().await
    }

    /// One page of a list (`tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`), its items
    /// as the server wrote them ([`List::page`] reads them typed). In the 2026 era a page is kept for the `ttlMs`
    /// the server gave it and served from memory until then (a list-changed notification drops the kept pages of
    /// its list; [`Client::list_page_fresh`] skips them).
    pub async fn list_page(&self, method: &str, cursor: Option<&str>) -> Result<Page, Error> {
        self.list_page_with(method, cursor, false).await
    }

    /// [`Client::list_page`] from the server, never from the kept pages.
    pub async fn list_page_fresh(&self, method: &str, cursor: Option<&str>) -> Result<Page, Error> {
        self.list_page_with(method, cursor, true).await
    }

    /// Every page of a list, in order, its items as the server wrote them.
    pub async fn list_all(&self, method: &str) -> Result<Vec<Value>, Error> {
        let Some(method) = list_method(method) else {
            return Err(not_a_list(method));
        };
        PageStream::new(self.clone(), method, false, Some).all_items().await
    }

    pub(super) async fn list_page_with(&self, method: &str, cursor: Option<&str>, fresh: bool) -> Result<Page, Error> {
        let key = match method {
            "tools/list" => "tools",
            "prompts/list" => "prompts",
            "resources/list" => "resources",
            "resources/templates/list" => "resourceTemplates",
            other => return Err(not_a_list(other)),
        };
        let params = match cursor {
            Some(c) => json!({ "cursor": c }),
            None => json!({}),
        };
        let cache_key = (method.to_owned(), cursor.map(str::to_owned));
        let kept = (!fresh)
            .then(|| self.inner.cache.locked().get(&cache_key).cloned())
            .flatten()
            .filter(|(until, _)| *until > Instant::now())
            .map(|(_, page)| page);
        let result = match kept {
            Some(page) => page,
            None => {
                let result = self.request(method, params).await?;
                let ttl = result["ttlMs"].as_u64().unwrap_or(0);
                if self.is_2026() && ttl > 0 {
                    let until = Instant::now() + Duration::from_millis(ttl);
                    self.inner.cache.locked().insert(cache_key, (until, result.clone()));
                }
                result
            }
        };
        let mut items = result[key].as_array().cloned().unwrap_or_default();
        if method == "tools/list" {
            items = self.inner.remember_headers(items, self.era());
        }
        Ok(Page { items, next_cursor: result["nextCursor"].as_str().map(str::to_owned) })
    }
}

/// The list method spelled `method`, as a `'static` name.
fn list_method(method: &str) -> Option<&'static str> {
    [Tool::METHOD, Prompt::METHOD, Resource::METHOD, ResourceTemplate::METHOD].into_iter().find(|m| *m == method)
}

fn not_a_list(method: &str) -> Error {
    Error::Usage(format!("{method} is not a list method"))
}

#[cfg(test)]
mod tests {
    use super::advance;

    #[test]
    fn paging_stops_where_the_cursor_points_nowhere_or_back_at_itself() {
        assert_eq!(advance(&None, Some("2".into())), Some("2".into()));
        assert_eq!(advance(&Some("2".into()), Some("2".into())), None);
        assert_eq!(advance(&Some("2".into()), None), None);
    }
}
