//! The operator dashboard at `/`: the page over HTTP, and the page as a person sees it in
//! headless Chromium.

#[path = "../common/mod.rs"]
mod common;

mod browser;
mod page;
mod support;
