//! The `worker` Lambda (filled by its issue).
fn main() {}
