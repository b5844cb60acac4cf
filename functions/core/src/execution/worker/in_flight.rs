//! The executions this worker process runs right now ([`InFlight`]).
//!
//! At-least-once delivery, event nudges and a wait's re-queue can put several copies of one
//! execution's message in a queue, and one receive batch (Lambda's event source mapping, the
//! ECS loop's long poll) can hold more than one of them. The copy that claims runs; each other
//! one finds the execution held under a live lease and used to wait for that lease, re-queued,
//! so every extra copy lived on as a delayed copy of its own (the full mix's seed 122: seven
//! copies of one fire live at once). When the holder is this very process, its own delivered
//! message stands for the execution until it finishes (in flight, returned if the process
//! dies), so the extra copy is simply deleted. Only an execution this process is running now
//! counts: a lease held under the same worker id by an earlier process (a fixed
//! `SUNDIAL_WORKER_ID`) is not this process's, and its copy still waits to take it over.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use sundial_store::executions::ExecKey;

/// The executions this process is running, each with how many of its attempts run here now.
#[derive(Debug, Default, Clone)]
pub(super) struct InFlight(Arc<Mutex<BTreeMap<String, u32>>>);

/// Holds one execution in [`InFlight`] until dropped.
#[derive(Debug)]
pub(super) struct Running {
    set: InFlight,
    id: String,
}

impl InFlight {
    /// Marks `key` running here until the returned guard is dropped.
    pub(super) fn enter(&self, key: &ExecKey) -> Running {
        let id = key.global_id();
        if let Ok(mut g) = self.0.lock() {
            *g.entry(id.clone()).or_insert(0) += 1;
        }
        Running { set: self.clone(), id }
    }

    /// Whether this process is running `key` now.
    pub(super) fn contains(&self, key: &ExecKey) -> bool {
        self.0.lock().is_ok_and(|g| g.contains_key(&key.global_id()))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(mut g) = self.set.0.lock() {
            if let Some(n) = g.get_mut(&self.id) {
                *n -= 1;
                if *n == 0 {
                    g.remove(&self.id);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_execution_is_in_flight_while_any_guard_for_it_lives() {
        let set = InFlight::default();
        let key = ExecKey::new("t", "j", 60_000);
        assert!(!set.contains(&key));
        let a = set.enter(&key);
        let b = set.enter(&key);
        drop(a);
        assert!(set.contains(&key));
        drop(b);
        assert!(!set.contains(&key));
    }
}
