//! The worker pools' queues as SQS counts them (operators only: a pool's queue carries every
//! tenant's fires, so its depth is every tenant's load; `docs/api.md`, "Pools").

use super::resource_limits::is_operator;
use super::{Caller, Control, ControlError};
use sundial_model::priority::Lane;
use sundial_store::queue::QueueCounts;

/// One pool's queues now.
#[derive(Debug, Clone, PartialEq)]
pub struct PoolDepth {
    /// The pool.
    pub pool: String,
    /// The most executions its workers can run at once (`SUNDIAL_POOL_CAPACITY`), if known.
    pub capacity: Option<u32>,
    /// Its main lane.
    pub main: QueueCounts,
    /// Its low-priority lane.
    pub low: QueueCounts,
    /// Its dead-letter queue.
    pub dead_letters: QueueCounts,
}

impl PoolDepth {
    /// Messages received and not deleted (both lanes) over the capacity: an upper bound of the
    /// share of its slots in use (a message held for a retry's backoff or a wait is in flight
    /// too). `None` without a capacity.
    pub fn saturation(&self) -> Option<f64> {
        let c = f64::from(self.capacity?.max(1));
        Some((self.main.in_flight + self.low.in_flight) as f64 / c)
    }
}

/// Every pool of the deployment, in its configured order. Operators only (403 `forbidden`).
pub async fn list(ctl: &Control, caller: &Caller) -> Result<Vec<PoolDepth>, ControlError> {
    if !is_operator(ctl, caller) {
        return Err(ControlError::Forbidden {
            message: "pool queues carry every tenant's fires: only callers of an operator tenant (SUNDIAL_OPERATOR_TENANTS) may read them".into(),
        });
    }
    let q = &ctl.ctx.queues;
    let mut out = Vec::new();
    for pool in &ctl.cfg().pools {
        out.push(PoolDepth {
            pool: pool.clone(),
            capacity: ctl.cfg().pool_capacity.get(pool).copied(),
            main: q.lane_counts(pool, Lane::Main).await?,
            low: q.lane_counts(pool, Lane::Low).await?,
            dead_letters: q.dlq_counts(pool).await?,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saturation_is_both_lanes_in_flight_over_the_capacity() {
        let c = |in_flight| QueueCounts { visible: 7, in_flight, delayed: 3 };
        let d =
            PoolDepth { pool: "p".into(), capacity: Some(120), main: c(30), low: c(6), dead_letters: c(0) };
        assert_eq!(d.saturation(), Some(0.3));
        assert_eq!(PoolDepth { capacity: None, ..d }.saturation(), None);
    }
}
