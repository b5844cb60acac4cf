//! The `api` Lambda (filled by its issue).
fn main() {}
