//! The `tick` Lambda (filled by its issue).
fn main() {}
