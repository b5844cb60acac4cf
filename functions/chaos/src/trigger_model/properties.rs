//! What is checked of a state: safety, the documented limits reported apart, and for liveness
//! the good end states and the obligations an end state leaves unmet.

use super::instance::{Bounds, Policy};
use super::state::{State, Status, LIMIT_OLDER_EDIT, LIMIT_OLDER_PAUSE};

impl State {
    fn label(&self, b: &Bounds, j: usize, m: u8) -> String {
        format!("fire {m} of job {}", b.jobs[j].label())
    }

    /// The documented limits that runs of this state fell in (bit set), and a description of
    /// the first of each.
    pub(super) fn limit_hits(&self, b: &Bounds) -> Vec<(u8, String)> {
        let mut out: Vec<(u8, String)> = Vec::new();
        for j in 0..b.jobs.len() {
            for m in 0..b.horizon {
                let Some(e) = self.slots[self.slot(b, j, m)].exec else { continue };
                for (bit, what) in [
                    (LIMIT_OLDER_PAUSE, "ran inside a paused window that is no longer the job's last"),
                    (LIMIT_OLDER_EDIT, "ran a definition an older edit replaced before its minute"),
                ] {
                    if e.runs > 0 && e.limit & bit != 0 && !out.iter().any(|x| x.0 == bit) {
                        let text = format!("{} {what} (documented limit)", self.label(b, j, m));
                        out.push((bit, text));
                    }
                }
            }
        }
        out
    }

    /// Safety properties of a single state.
    pub(super) fn check(&self, b: &Bounds) -> Option<String> {
        for (j, spec) in b.jobs.iter().enumerate() {
            for m in 0..b.horizon {
                let slot = &self.slots[self.slot(b, j, m)];
                let Some(e) = slot.exec else { continue };
                if spec.poison || e.runs == 0 {
                    continue;
                }
                let (enabled, def) = (slot.snap & 1 != 0, slot.snap >> 1);
                let what = self.label(b, j, m);
                // The documented limits (see the module docs) are excluded here, reported apart.
                if !enabled && e.limit & LIMIT_OLDER_PAUSE == 0 {
                    return Some(format!("{what} ran inside a paused window"));
                }
                if e.limit & LIMIT_OLDER_EDIT != 0 {
                    continue;
                }
                if spec.mask(def) & (1 << m) == 0 {
                    return Some(format!("{what} ran but is not a fire of v{def}, in force at minute {m}"));
                }
                if e.def != def {
                    return Some(format!("{what} ran definition v{}, but v{def} was in force", e.def));
                }
                if e.runs > 1 {
                    return Some(format!("{what}: its handler ran twice"));
                }
                if e.status == Status::Succeeded && e.effects == 0 {
                    return Some(format!("{what} succeeded but its effect was skipped as already applied"));
                }
            }
        }
        None
    }

    /// The unmet obligations of an end state (empty: every owed fire ran, none stranded).
    pub(super) fn unmet(&self, b: &Bounds) -> Vec<String> {
        let mut out = Vec::new();
        for (j, spec) in b.jobs.iter().enumerate() {
            if spec.poison {
                continue;
            }
            for m in 0..b.horizon {
                let slot = &self.slots[self.slot(b, j, m)];
                let what = self.label(b, j, m);
                if let Some(e) = slot.exec {
                    if !e.is_final() {
                        let msg = if e.queued() == 0 { "with no message: stranded" } else { "still queued" };
                        out.push(format!("{what}: execution {:?} {msg}", e.status));
                        continue;
                    }
                }
                let (enabled, def) = (slot.snap & 1 != 0, slot.snap >> 1);
                let owed = enabled
                    && spec.mask(def) & (1 << m) != 0
                    && !slot.excused
                    && (spec.policy == Policy::FireAll || slot.seen);
                match slot.exec {
                    _ if !owed => {}
                    None => out.push(format!("{what} never executed (no execution)")),
                    Some(e) if e.status == Status::Canceled => {
                        out.push(format!("{what} never executed (its execution was canceled)"))
                    }
                    Some(_) => {}
                }
            }
        }
        out
    }

    /// Nothing in flight and nothing left to deliver: where a behaviour ends.
    pub(super) fn quiescent(&self, b: &Bounds) -> bool {
        self.now == b.horizon
            && self.settled()
            && self.slots.iter().all(|s| s.exec.is_none_or(|e| e.is_final() || e.queued() == 0))
    }

    fn settled(&self) -> bool {
        self.scan.is_none()
            && self.pending.iter().all(Option::is_none)
            && self.workers.iter().all(Option::is_none)
    }

    pub(super) fn done(&self, b: &Bounds) -> bool {
        self.now == b.horizon && self.settled() && self.unmet(b).is_empty()
    }
}
