//! The worker pools' queues (operators only).

use super::Res;
use crate::extract::{Auth, Now};
use crate::Api;
use axum::extract::State;
use axum::Json;
use sundial_api_types::{PoolQueue, PoolQueues, QueueDepth};
use sundial_core::control;
use sundial_store::queue::QueueCounts;

fn depth(c: QueueCounts) -> QueueDepth {
    QueueDepth { visible: c.visible, in_flight: c.in_flight, delayed: c.delayed }
}

/// Every worker pool's queues as SQS counts them now: waiting, in flight and delayed on each
/// lane, dead letters, and saturation against the pool's capacity (operators only: a pool's
/// queue carries every tenant's fires).
#[utoipa::path(get, path = "/v1/pools", operation_id = "listPools", tag = "pools",
    responses((status = 200, description = "Every pool, in the deployment's order", body = PoolQueues)))]
pub(crate) async fn list_pools(
    State(api): State<Api>,
    Auth(caller): Auth,
    Now(now): Now,
) -> Res<Json<PoolQueues>> {
    let pools = control::pools::list(api.control(), &caller).await?;
    let pools = pools
        .into_iter()
        .map(|p| PoolQueue {
            saturation: p.saturation(),
            pool: p.pool,
            capacity: p.capacity,
            main: depth(p.main),
            low: depth(p.low),
            dead_letters: depth(p.dead_letters),
        })
        .collect();
    Ok(Json(PoolQueues { observed_at: now, pools }))
}
