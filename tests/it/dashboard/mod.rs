//! The operator dashboard at `/`: the page over HTTP, and the page as a person sees it in
//! headless Chromium.

mod browser;
mod page;
mod support;
