//! `/api/v1/books`: the library's book copies.

mod create;
mod get;
mod isbn;
mod list;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::resource::Resource;
use crate::state::AppState;
pub use crate::store::books::Book;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create::create_book, list::list_books))
        .routes(routes!(get::get_book))
}

impl Resource for Book {
    const NAME: &'static str = "book";
}
