//! Keyset pagination: `limit` (1 to 500) and an opaque `cursor`; answers `{items, next_cursor}`.
//!
//! Keyset rather than offset: a page costs the same at row ten million as at row ten, and rows
//! inserted meanwhile never shift a page.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::ApiError;
use super::extract::Query;
pub use crate::store::PageRequest;

pub const DEFAULT_LIMIT: i64 = 50;
pub const MAX_LIMIT: i64 = 500;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageParams {
    /// Items per page, 1 to 500 (default 50).
    pub limit: Option<i64>,
    /// The `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

impl PageParams {
    pub fn validate(&self) -> Result<PageRequest, ApiError> {
        page_request(self.limit, self.cursor.as_deref())
    }
}

/// The page a list without filters is asked for: its [`PageParams`], read (400 when they cannot
/// be) and checked (422 naming the one that is off). Documented by `params(PageParams)`; the
/// document adds the 422 (`openapi.rs`).
#[derive(Debug, Clone, Copy)]
pub struct PageQuery(pub PageRequest);

impl<S: Send + Sync> FromRequestParts<S> for PageQuery {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let Query(params) = Query::<PageParams>::from_request_parts(parts, state).await?;
        Ok(PageQuery(params.validate()?))
    }
}

/// The page that `limit` and `cursor` ask for, or a 422 naming the one that is off. The list
/// parameters with filters call it with their own `limit` and `cursor` fields (they cannot
/// flatten [`PageParams`]: see `fines/list.rs`).
pub fn page_request(limit: Option<i64>, cursor: Option<&str>) -> Result<PageRequest, ApiError> {
    let limit = limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::invalid("limit", format!("must be between 1 and {MAX_LIMIT}")));
    }
    let after = match cursor {
        None | Some("") => 0,
        Some(c) => {
            decode_cursor(c).ok_or_else(|| ApiError::invalid("cursor", "is not a cursor this service issued"))?
        }
    };
    Ok(PageRequest { after, limit })
}

/// One page of a list.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Page<T> {
    pub items: Vec<T>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

impl<T> Page<T> {
    /// A list short enough to be answered whole, as the one and last page.
    pub fn whole(items: Vec<T>) -> Self {
        Page {
            items,
            next_cursor: None,
        }
    }

    /// Builds the page from up to `limit + 1` rows ordered by id.
    pub fn from_rows(mut rows: Vec<T>, request: PageRequest, id_of: impl Fn(&T) -> i64) -> Self {
        let limit = usize::try_from(request.limit).unwrap_or(usize::MAX);
        let next_cursor = if rows.len() > limit {
            rows.truncate(limit);
            rows.last().map(|last| encode_cursor(id_of(last)))
        } else {
            None
        };
        Page {
            items: rows,
            next_cursor,
        }
    }
}

impl<T> Page<T> {
    /// The same page with each item converted (row type to API type).
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            next_cursor: self.next_cursor,
        }
    }
}

/// Cursors are the last id seen, prefixed so that clients do not mistake them for ids.
fn encode_cursor(id: i64) -> String {
    format!("c{id}")
}

fn decode_cursor(cursor: &str) -> Option<i64> {
    cursor.strip_prefix('c')?.parse().ok().filter(|id: &i64| *id >= 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trip_and_bounds() {
        let req = PageParams {
            limit: Some(2),
            cursor: Some(encode_cursor(7)),
        }
        .validate()
        .unwrap();
        assert_eq!((req.after, req.limit), (7, 2));
        assert!(page_request(Some(0), None).is_err());
        assert!(page_request(Some(501), None).is_err());
        assert!(page_request(None, Some("7")).is_err(), "a cursor is not an id");
        let first = page_request(None, Some("")).unwrap();
        assert_eq!((first.after, first.limit), (0, DEFAULT_LIMIT));
        let page = Page::from_rows(vec![1, 2, 3], req, |x| *x);
        assert_eq!(page.items, vec![1, 2]);
        assert_eq!(page.next_cursor.as_deref(), Some("c2"));
    }
}
