//! The exhaustive check: the trigger plane as a [`Model`] for the crate's explorer, what an
//! exploration found, and the one-line reports.

use super::actions::Action;
use super::instance::Bounds;
use super::state::State;
use super::variants::{cases, Flaw};
use crate::explore::{self, Model};

/// What an exploration found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exploration {
    /// Distinct reachable states.
    pub states: usize,
    /// Transitions between them.
    pub transitions: usize,
    /// Reachable good end states.
    pub done_states: usize,
    /// The first safety violation, with the shortest trace that reaches it.
    pub safety: Option<Violation>,
    /// The documented limits reached (excluded from [`Exploration::safety`]): for each, the
    /// shortest trace to a run in it. See the documented limit in the
    /// [`trigger_model`](super) docs.
    pub limits: Vec<Violation>,
    /// A reachable state from which no good end state is reachable: the shortest trace to the
    /// first such state, continued by the shortest path to a settled end state (clock at the
    /// horizon, nothing in flight) whose unmet obligation is the property.
    pub liveness: Option<Violation>,
}

/// A property that failed, and how to get there from the initial state (the explorer's type,
/// over this model's actions).
pub type Violation = explore::Violation<Action>;

/// The trigger plane of the instance `b` with the protocol `flaw`, as the explorer sees it.
struct TriggerPlane<'a> {
    b: &'a Bounds,
    flaw: Flaw,
}

impl Model for TriggerPlane<'_> {
    type State = State;
    type Action = Action;

    fn initial_states(&self) -> Vec<State> {
        vec![State::initial(self.b)]
    }

    fn successors(&self, s: &State) -> Vec<explore::Step<State, Action>> {
        s.successors(self.b, self.flaw).into_iter().map(|(a, n)| explore::Step::to(a, n)).collect()
    }

    fn invariant(&self, s: &State) -> Option<String> {
        s.check(self.b)
    }

    /// The documented limits, reported apart from safety.
    fn noted(&self, s: &State) -> Vec<(u8, String)> {
        s.limit_hits(self.b)
    }

    fn done(&self, s: &State) -> bool {
        s.done(self.b)
    }

    /// A settled end state that leaves obligations unmet, ranked by how many: a liveness trace
    /// is continued to the nearest one that misses the fewest, to name what it owes.
    fn dead_end(&self, s: &State) -> Option<usize> {
        let n = if s.quiescent(self.b) { s.unmet(self.b).len() } else { 0 };
        (n > 0).then_some(n)
    }
}

/// Explores every reachable state of the instance `b` (with the protocol `flaw`), checking the
/// safety properties on the way and liveness at the end.
pub fn explore(b: &Bounds, flaw: Flaw) -> Exploration {
    let e = explore::explore(&TriggerPlane { b, flaw });
    let liveness = e.liveness.map(|d| {
        let mut trace = d.trace;
        let property = match d.end {
            Some(end) => {
                let doomed = trace.len();
                trace.extend(end.tail);
                let unmet = e.states[end.state].unmet(b);
                let what = unmet.first().cloned().unwrap_or_default();
                let more = if end.rank > 1 { format!(" and {} more", end.rank - 1) } else { String::new() };
                format!("{what}{more}; doomed after step {doomed}")
            }
            None => "no good end state reachable (livelock)".to_string(),
        };
        Violation { property, trace }
    });
    Exploration {
        states: e.states.len(),
        transitions: e.transitions,
        done_states: e.done_states,
        safety: e.safety,
        limits: e.noted,
        liveness,
    }
}

/// One line of [`report`]: the instance, the protocol, and what the check found.
pub fn report_line(b: &Bounds, flaw: Flaw, e: &Exploration) -> String {
    let head = if flaw == Flaw::None { "none".to_string() } else { format!("{flaw:?}") };
    let mut line =
        format!("{head:<28} instance={:<15} states={} transitions={}", b.name, e.states, e.transitions);
    match (&e.safety, &e.liveness) {
        (None, None) if !e.limits.is_empty() => line.push_str(" ok with documented limits"),
        (None, None) => line.push_str(" ok"),
        (Some(v), _) => {
            line.push_str(&format!(" safety property=\"{}\" trace_len={}", v.property, v.trace.len()))
        }
        (None, Some(v)) => {
            line.push_str(&format!(" liveness property=\"{}\" trace_len={}", v.property, v.trace.len()))
        }
    }
    for v in &e.limits {
        line.push_str(&format!(" limit=\"{}\" limit_trace_len={}", v.property, v.trace.len()));
    }
    line
}

/// Explores every case of [`cases`]; one line per case.
pub fn report() -> Vec<String> {
    cases().into_iter().map(|(flaw, b)| report_line(&b, flaw, &explore(&b, flaw))).collect()
}
