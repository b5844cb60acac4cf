//! Replays a trace from the initial state, to look at the executions it leaves.

use super::actions::Action;
use super::instance::Bounds;
use super::state::{State, Status};
use super::variants::Flaw;

/// An execution's status after a [`replay`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecState {
    /// Planned, not yet run.
    Ready,
    /// Claimed by a worker (two-worker mode).
    Running,
    /// Ran to the end.
    Succeeded,
    /// Canceled (held at delivery, superseded by an edit, or canceled by a pause).
    Canceled,
}

/// One execution after a [`replay`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FireOutcome {
    /// The job (index into [`Bounds::jobs`]).
    pub job: u8,
    /// The fire minute.
    pub minute: u8,
    /// Its status.
    pub state: ExecState,
    /// The definition version it carries (ran with, if it succeeded).
    pub definition: u8,
    /// Held by a pause.
    pub held: bool,
    /// Effects the inbox applied for it.
    pub effects: u8,
}

/// Replays `trace` from the initial state (each action must be enabled; the first successor
/// with that label is taken) and lists the executions at the end. `Err(i)`: action `i` was not
/// enabled.
pub fn replay(b: &Bounds, flaw: Flaw, trace: &[Action]) -> Result<Vec<FireOutcome>, usize> {
    let mut s = State::initial(b);
    for (i, a) in trace.iter().enumerate() {
        let next = s.successors(b, flaw).into_iter().find(|(x, _)| x == a).ok_or(i)?;
        s = next.1;
    }
    let mut out = Vec::new();
    for j in 0..b.jobs.len() {
        for m in 0..b.horizon {
            let Some(e) = s.slots[s.slot(b, j, m)].exec else { continue };
            let state = match e.status {
                Status::Ready => ExecState::Ready,
                Status::Running { .. } => ExecState::Running,
                Status::Succeeded => ExecState::Succeeded,
                Status::Canceled => ExecState::Canceled,
            };
            out.push(FireOutcome {
                job: j as u8,
                minute: m,
                state,
                definition: e.def,
                held: e.held,
                effects: e.effects,
            });
        }
    }
    Ok(out)
}
