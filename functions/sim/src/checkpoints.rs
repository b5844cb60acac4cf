//! Checkpoints (docs/execution.md, "Checkpoints"; docs/simulation.md, "checkpoints"): a
//! handler commits its progress, fenced on its claim's token, and the next holder of the
//! execution (a takeover, or a retry) resumes from the last checkpoint committed.
//!
//! The simulated handler of a job whose params carry `checkpointEveryMs` works in steps of that
//! length and commits `{"doneMs", "token"}` after each; a run that is handed a checkpoint does
//! only the work left. It records every commit it tried (with the answer it got) and every
//! checkpoint it was handed ([`Save`], [`Resume`]). The promise, checked from those:
//!
//! - a run is handed a checkpoint some earlier holder of the execution tried to commit (a
//!   lower token), never one of its own claim or a later one;
//! - it is handed nothing older than the last checkpoint committed and acknowledged before the
//!   run began (ordered by token, then progress): a zombie's late commit that landed over a
//!   newer holder's (a fence that let it through) hands the next run stale progress, and a
//!   checkpoint lost between holders makes it start over.
//!
//! A commit whose answer was lost may have landed: it is never required, only allowed.

use crate::violation::Violation;
use std::collections::BTreeMap;

/// How often a checkpointing simulated job commits its progress (`params.checkpointEveryMs`):
/// a few times in a slow run (20 to 50 s), so a stall or a kill meets one in flight.
pub const EVERY_MS: u64 = 5_000;

/// One checkpoint commit a run tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Save {
    /// The execution (`job@ms`).
    pub execution: String,
    /// The token of the claim it was made under.
    pub token: u64,
    /// The progress it commits (ms of work done).
    pub done_ms: u64,
    /// When the answer came (simulated ms).
    pub answered_ms: i64,
    /// Whether the store acknowledged it.
    pub ok: bool,
}

/// The checkpoint a run was handed as it began.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume {
    /// The execution (`job@ms`).
    pub execution: String,
    /// The run's own token.
    pub token: u64,
    /// When the run began (simulated ms).
    pub at_ms: i64,
    /// The checkpoint handed to it: (the token it was made under, progress), if any.
    pub from: Option<(u64, u64)>,
}

/// The checkpoint a simulated handler commits.
pub fn value(token: u64, done_ms: u64) -> serde_json::Value {
    serde_json::json!({ "doneMs": done_ms, "token": token })
}

/// The (token, progress) of a checkpoint [`value`] made; `None` for anything else.
pub fn parse(v: &serde_json::Value) -> Option<(u64, u64)> {
    Some((v.get("token")?.as_u64()?, v.get("doneMs")?.as_u64()?))
}

/// The `checkpoints:` line of a run (empty when no job checkpoints).
pub fn summary(saves: &[Save], resumes: &[Resume]) -> String {
    if resumes.is_empty() {
        return String::new();
    }
    let refused = saves.iter().filter(|s| !s.ok).count();
    let handed = resumes.iter().filter(|r| r.from.is_some()).count();
    format!(
        "checkpoints: {} commits / {refused} refused or unanswered, {} runs / {handed} resumed from one\n",
        saves.len(),
        resumes.len()
    )
}

/// The checkpoint invariant over every commit tried and every run's start (module doc).
pub fn check(saves: &[Save], resumes: &[Resume]) -> Vec<Violation> {
    let mut by_exec: BTreeMap<&str, Vec<&Save>> = BTreeMap::new();
    for s in saves {
        by_exec.entry(s.execution.as_str()).or_default().push(s);
    }
    let mut out = Vec::new();
    let mut reported = std::collections::BTreeSet::new();
    for r in resumes {
        let mine = by_exec.get(r.execution.as_str()).map_or(&[][..], Vec::as_slice);
        let best = mine
            .iter()
            .filter(|s| s.ok && s.token < r.token && s.answered_ms <= r.at_ms)
            .map(|s| (s.token, s.done_ms))
            .max();
        let wrong = match r.from {
            Some((t, _)) if t >= r.token => {
                Some(format!("handed a checkpoint of token {t}, not an earlier holder's"))
            }
            Some((t, d)) if !mine.iter().any(|s| s.token == t && s.done_ms == d) => {
                Some(format!("handed a checkpoint ({t}, {d} ms) no run committed"))
            }
            Some(from) if best.is_some_and(|b| from < b) => {
                Some(format!("handed ({}, {} ms), older than the committed {best:?}", from.0, from.1))
            }
            None if best.is_some() => Some(format!("handed nothing, though {best:?} was committed")),
            _ => None,
        };
        if let Some(what) = wrong {
            if reported.insert(r.execution.as_str()) {
                out.push(Violation {
                    invariant: "checkpoints",
                    detail: format!("the run of token {} at {}: {what}", r.token, crate::world::ms(r.at_ms)),
                    execution: Some(r.execution.clone()),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn save(token: u64, done_ms: u64, answered_ms: i64, ok: bool) -> Save {
        Save { execution: "j@1".into(), token, done_ms, answered_ms, ok }
    }

    fn resume(token: u64, at_ms: i64, from: Option<(u64, u64)>) -> Resume {
        Resume { execution: "j@1".into(), token, at_ms, from }
    }

    #[test]
    fn a_takeover_resumes_from_the_last_commit_acknowledged() {
        let saves = [save(1, 5_000, 10, true), save(1, 10_000, 20, true), save(1, 15_000, 30, false)];
        // The last acknowledged, or the later one whose answer was lost (it may have landed)
        assert!(check(&saves, &[resume(2, 40, Some((1, 10_000)))]).is_empty());
        assert!(check(&saves, &[resume(2, 40, Some((1, 15_000)))]).is_empty());
        assert!(check(&saves, &[resume(1, 0, None)]).is_empty(), "the first run");
        let lost = check(&saves, &[resume(2, 40, None)]);
        assert_eq!(lost[0].invariant, "checkpoints");
        let older = check(&saves, &[resume(2, 40, Some((1, 5_000)))]);
        assert!(older[0].detail.contains("older"), "{older:?}");
    }

    #[test]
    fn a_zombies_late_commit_over_a_newer_holder_hands_the_next_run_stale_progress() {
        let saves = [
            save(1, 5_000, 10, true),
            save(2, 10_000, 60, true),
            // the zombie's commit, let through by a broken fence
            save(1, 10_000, 70, true),
        ];
        let v = check(&saves, &[resume(3, 90, Some((1, 10_000)))]);
        assert!(v[0].detail.contains("older"), "{v:?}");
        assert!(check(&saves, &[resume(3, 90, Some((2, 10_000)))]).is_empty());
    }

    #[test]
    fn a_checkpoint_of_its_own_claim_or_one_never_made_is_reported() {
        let saves = [save(1, 5_000, 10, true)];
        assert!(check(&saves, &[resume(1, 40, Some((1, 5_000)))])[0].detail.contains("not an earlier"));
        assert!(check(&saves, &[resume(2, 40, Some((1, 7_000)))])[0].detail.contains("no run"));
    }
}
