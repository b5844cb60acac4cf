//! # sundial-tidy
//!
//! Tidy reads the repository's sources, the way TigerBeetle's `tidy.zig` does, and holds the
//! limits the style guide sets but the compiler cannot see (`tests/tidy/main.rs` runs the checks on
//! the real tree; `cargo test -p sundial-tidy -- --nocapture` prints the figures):
//!
//! - **File length:** a production file (a crate's `src/` without `#[cfg(test)]` code, the CDK
//!   library, the console's JavaScript) has at most 700 *code* lines. Comments and blank lines
//!   do not count, so a file cannot pass by shortening its doc comments: a limit met by trimming
//!   comments is no limit.
//! - **Function length:** no function is longer than its group's constant, and each constant
//!   equals the longest function of its group. The constants are a ratchet: a function can only
//!   go over one by raising it in review, and once the longest function shrinks the test asks
//!   for the constant to come down with it, so the limit only ever goes down.
//! - **No module cycles:** inside a crate, no file uses another that (directly or around a loop)
//!   uses it back, through `mod.rs` files and across folders. A module boundary that both sides
//!   cross is no boundary. (A parent re-exporting its child's item does not use the child.)
//! - **One copy of each stable hash:** the FNV-1a 64 and SplitMix64 constants are written only
//!   in `sundial-hash`, whose golden tests pin them.
//!
//! Where today's tree is over a limit, the test carries a named list of the known exceptions,
//! and each of them fails once it is no longer needed, so the lists also only shrink. The
//! tolerated module cycles are listed exactly, each as its files: a new cycle, or one that grew
//! by a file, fails as surely as a cycle in a crate that had none. All the ratchets live in one
//! file, `tests/tidy/ratchets.rs`, which the test prints for today's tree when
//! `TIDY_PRINT_RATCHETS=1` (see `tests/tidy/main.rs`).
//!
//! The scanning is textual and needs no dependency: [`lex`] and [`ts`] mask comments and
//! literals (raw strings, char literals vs lifetimes, template literals, regexes) so braces can
//! be matched; [`rust`] drops `#[cfg(test)]` items and finds functions, [`tsfn`] the CDK's;
//! [`modgraph`] builds each target's file graph and [`scc`] finds its cycles; [`workspace`]
//! sorts a set of `(path, text)` into crates; [`checks`] returns the violations and [`report`]
//! the summary.

pub mod checks;
pub mod lex;
pub mod modgraph;
pub mod report;
pub mod rust;
pub mod scc;
pub mod ts;
pub mod tsfn;
pub mod workspace;

#[cfg(test)]
mod probes;
