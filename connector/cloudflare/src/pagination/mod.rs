//! Walking a list endpoint page by page. The next page is decided by [`next_page`], a
//! pure function of the page just read: stop at the last page `result_info` announces
//! or at an empty page, and refuse a list longer than [`MAX_PAGES`] rather than follow
//! a server that never ends.

use http::Method;
use serde::de::DeserializeOwned;

use crate::client::Call;
use crate::envelope::{Decoded, ResultInfo};
use crate::{Client, Error};

/// The most pages one list walk reads.
pub const MAX_PAGES: u32 = 200;

/// What comes after reading `page`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Read this page next.
    Page(u32),
    /// The list is complete.
    Done,
    /// The list has more than `max_pages` pages.
    TooMany,
}

/// What to read after `page`, which held `items` items and came with `info`.
pub(crate) fn next_page(
    page: u32,
    info: Option<&ResultInfo>,
    items: usize,
    max_pages: u32,
) -> Next {
    let Some(info) = info else {
        return Next::Done;
    };
    if items == 0 || page >= info.pages() {
        return Next::Done;
    }
    if page >= max_pages {
        return Next::TooMany;
    }
    Next::Page(page + 1)
}

impl Client {
    /// Every item of a list, `per_page` at a time, walking at most [`MAX_PAGES`].
    pub(crate) async fn list_all<T: DeserializeOwned>(
        &self,
        call: Call,
        per_page: u32,
    ) -> Result<Vec<T>, Error> {
        let mut items = Vec::new();
        let mut page = 1;
        loop {
            let request = call
                .clone()
                .query("page", page.to_string())
                .query("per_page", per_page.to_string());
            let decoded: Decoded<Vec<T>> = self.call(&request).await?;
            let count = decoded.result.len();
            items.extend(decoded.result);
            match next_page(page, decoded.info.as_ref(), count, MAX_PAGES) {
                Next::Page(next) => page = next,
                Next::Done => return Ok(items),
                Next::TooMany => {
                    return Err(Error::TooManyPages {
                        method: Method::GET,
                        path: self.scrub(&call.path_and_query()),
                        limit: MAX_PAGES,
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
