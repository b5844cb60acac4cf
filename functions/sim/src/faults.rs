//! The faults of a run, drawn from its seed: when the tick and the reconciler are down, when
//! the network loses responses, throttles or fails, when SQS is down while DynamoDB is up, when
//! messages are lost, duplicated or delayed, which worker is killed when (at whatever await
//! point it is in) and for how long, which worker stalls when (a zombie: frozen past its lease,
//! then it wakes and carries on), and each worker's clock skew.

use crate::{between, chance};
use sundial_simaws::Faults;

/// A window of network faults.
#[derive(Debug, Clone)]
pub struct NetWindow {
    /// Start (ms).
    pub from_ms: i64,
    /// End (ms, exclusive).
    pub to_ms: i64,
    /// What goes wrong meanwhile.
    pub faults: Faults,
}

/// A worker killed at `at_ms` and restarted `down_ms` later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kill {
    /// When (ms).
    pub at_ms: i64,
    /// Which worker.
    pub worker: usize,
    /// How long it stays down (ms).
    pub down_ms: i64,
}

/// A worker frozen at `at_ms` for `len_ms`: every request it makes meanwhile waits until it
/// wakes (a long GC pause, a partition), while its own work goes on. The fault controller aims
/// it at a worker in the middle of a long target call, if one is (`Ledger::busy`), else at
/// `worker`. Longer than a lease, so
/// what it held is taken over; when it wakes, its heartbeats, finishes and notes arrive late, as
/// a zombie's, and must be fenced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stall {
    /// When (ms).
    pub at_ms: i64,
    /// Which worker.
    pub worker: usize,
    /// How long (ms).
    pub len_ms: i64,
    /// Whether it wakes [`WAKE_AFTER_TAKEOVER_MS`] after another worker takes over a run it
    /// held, if that comes first: a zombie that carries on while the new holder still runs, so
    /// its late heartbeats, checkpoints, notes and finish all meet a live lease (the fence
    /// must refuse each; a stall that outlasts the takeover's run only meets a closed one).
    pub wake_on_takeover: bool,
}

/// How long after its instant a stall may wait for a worker busy with a long target call to
/// aim at (ms): the stall's disturbance runs from its instant to this much past its end.
pub const STALL_AIM_MS: i64 = 60_000;

/// How soon a [`Stall::wake_on_takeover`] stall ends after the takeover (ms).
pub const WAKE_AFTER_TAKEOVER_MS: i64 = 2_000;

/// Where the wake-on-takeover draws start in the seed's stream (clear of every other draw).
const WAKE_DRAWS: u64 = 3_500_000;

/// Every fault of a run.
#[derive(Debug, Clone, Default)]
pub struct FaultPlan {
    /// Tick outages `[from, to)` (ms).
    pub tick_outages: Vec<(i64, i64)>,
    /// Reconciler outages `[from, to)` (ms).
    pub reconciler_outages: Vec<(i64, i64)>,
    /// Network fault windows, not overlapping, in time order.
    pub net: Vec<NetWindow>,
    /// Worker kills, in time order.
    pub kills: Vec<Kill>,
    /// Worker stalls (zombies), in time order.
    pub stalls: Vec<Stall>,
    /// Each worker's clock skew (ms).
    pub skews: Vec<i64>,
}

/// Whether `t` lies in one of `windows`.
pub fn inside(windows: &[(i64, i64)], t: i64) -> bool {
    windows.iter().any(|&(a, b)| a <= t && t < b)
}

fn outages(seed: u64, base: u64, from: i64, to: i64, count: u64, max_len_min: u64) -> Vec<(i64, i64)> {
    (0..count)
        .map(|k| {
            let n = base + k * 4;
            let start = from + between(seed, n, 0, (to - from).max(1) as u64) as i64;
            let len =
                between(seed, n + 1, 1, max_len_min) as i64 * 60_000 + between(seed, n + 2, 0, 59_999) as i64;
            (start, (start + len).min(to))
        })
        .collect()
}

fn net_faults(seed: u64, n: u64) -> Faults {
    let p = |k: u64, max_permille: u64| between(seed, n + k, 0, max_permille) as f64 / 1000.0;
    let mut f = Faults::default();
    match between(seed, n, 0, 5) {
        0 => f.lost_response = p(1, 150),
        1 => f.throttle = p(1, 300),
        2 => f.server_error = p(1, 200),
        3 => {
            f.sqs_lose_on_send = p(1, 100);
            f.sqs_duplicate = p(2, 100);
            f.sqs_extra_delay_ms = (p(3, 300), between(seed, n + 4, 1_000, 90_000));
        }
        4 => f.sqs_down = true,
        _ => {
            f.lost_response = p(1, 50);
            f.throttle = p(2, 50);
            f.server_error = p(3, 50);
            f.sqs_lose_on_send = p(4, 30);
            f.sqs_duplicate = p(5, 30);
        }
    }
    f.latency_ms = between(seed, n + 9, 0, 200);
    f
}

/// Where the index-lag draws start in the seed's stream (clear of every other draw).
const INDEX_LAG_DRAWS: u64 = 3_100_000;

/// How far the indexes lag in the `k`-th network window (ms, 0: not at all): two windows in
/// five, 200 ms to 10 s, so a read of the `due`, `open` or a job's executions index may miss a
/// write made up to then (DynamoDB's global secondary indexes are eventually consistent, and
/// lag for seconds under load). Drawn from a stream of its own: the windows stay what they were.
fn index_lag(seed: u64, k: u64) -> u64 {
    let n = INDEX_LAG_DRAWS + k * 2;
    if chance(seed, n, 400) {
        between(seed, n + 1, 200, 10_000)
    } else {
        0
    }
}

/// Where the tick-throttle draws start in the seed's stream (clear of every other draw).
const TICK_THROTTLE_DRAWS: u64 = 3_600_000;

/// The process name of the simulated tick (`World::ctx("tick")`), which a tick-throttle
/// window is aimed at.
pub const TICK_PROCESS: &str = "tick";

/// A throttling window aimed at the tick alone, in the `k`-th gap `[from, to)` between network
/// windows, in one gap in three: 30 s to 3 minutes in which 30 to 70 % of the tick's requests
/// are throttled, so a bucket read fails past the SDK's retries and the scan must not move its
/// watermark past it (a tick that skips a bucket it could not read loses its fires). Drawn
/// from a stream of its own: the other windows stay what they were.
fn tick_throttle(seed: u64, k: u64, from: i64, to: i64) -> Option<NetWindow> {
    let n = TICK_THROTTLE_DRAWS + k * 4;
    if !chance(seed, n, 333) || to - from < 4 * 60_000 {
        return None;
    }
    let len = between(seed, n + 1, 30_000, 180_000) as i64;
    let a = from + 60_000 + between(seed, n + 2, 0, (to - from - 60_000 - len).max(0) as u64) as i64;
    let faults = Faults {
        throttle: between(seed, n + 3, 300, 700) as f64 / 1000.0,
        only_process: Some(TICK_PROCESS.into()),
        ..Faults::default()
    };
    Some(NetWindow { from_ms: a, to_ms: (a + len).min(to - 1), faults })
}

/// Where the hot-bucket draws start in the seed's stream (clear of every other draw).
const HOT_BUCKET_DRAWS: u64 = 3_700_000;

/// Up to two hot minutes: the time-bucket partitions of one minute (`{minute}#{shard}`, every
/// shard's) throttled for 2 to 4 minutes from just before the tick first reads them (a minute
/// ahead), as DynamoDB throttles a hot partition. The tick reads the current minute's buckets
/// again on its next run, so only a bucket that stays unreadable across ticks shows a scan
/// that skips it: the watermark must stay before it, and its fires run once it answers. A
/// minute that ends in 0, where most bucket jobs (every 2, 5 or 15 minutes) fire; a window
/// that would overlap another network window is left out.
fn hot_buckets(seed: u64, from: i64, to: i64, net: &[NetWindow]) -> Vec<NetWindow> {
    let mut out: Vec<NetWindow> = Vec::new();
    for k in 0..between(seed, HOT_BUCKET_DRAWS, 0, 2) {
        let n = HOT_BUCKET_DRAWS + 1 + k * 4;
        let at = from + between(seed, n, 0, (to - from).max(1) as u64) as i64;
        let minute = (at.div_euclid(60_000) / 10 + 1) * 10;
        let a = (minute - 1) * 60_000 - 5_000;
        let b = (a + between(seed, n + 1, 120_000, 240_000) as i64).min(to);
        let overlaps = |w: &NetWindow| w.from_ms < b && a < w.to_ms;
        if a >= b || net.iter().any(overlaps) || out.iter().any(overlaps) {
            continue;
        }
        let faults = Faults {
            only_process: Some(TICK_PROCESS.into()),
            throttle_matching: Some(format!("{minute}#")),
            ..Faults::default()
        };
        out.push(NetWindow { from_ms: a, to_ms: b, faults });
    }
    out
}

/// Draws the faults of `seed` for a run whose faults happen in `[from, to)`, with `workers`
/// workers.
pub fn draw(seed: u64, from: i64, to: i64, workers: usize) -> FaultPlan {
    let span_min = ((to - from) / 60_000).max(1) as u64;
    let tick_outages = outages(seed, 50_000, from, to, between(seed, 49_999, 0, 3), 120.min(span_min));
    let reconciler_outages = outages(seed, 60_000, from, to, between(seed, 59_999, 0, 2), 90.min(span_min));
    let mut net = Vec::new();
    let mut t = from;
    let mut k = 0u64;
    while t < to {
        let n = 70_000 + k * 16;
        let gap = between(seed, n, 2, 40) as i64 * 60_000;
        let len = between(seed, n + 1, 1, 25) as i64 * 60_000;
        let (a, b) = (t + gap, (t + gap + len).min(to));
        if a >= to {
            break;
        }
        let mut faults = net_faults(seed, n + 2);
        faults.gsi_lag_ms = index_lag(seed, k);
        net.extend(tick_throttle(seed, k, t, a));
        net.push(NetWindow { from_ms: a, to_ms: b, faults });
        t = b;
        k += 1;
    }
    // Half the tick outages end in a throttling of the tick: its first scans after the outage
    // walk the minutes it missed, and a bucket it cannot read among those is read by no later
    // tick unless the watermark stays before it (a bucket of the current minute or the next is
    // read again by the next tick anyway, so only a catch-up walk shows a skipped one).
    for (i, &(_, end)) in tick_outages.iter().enumerate() {
        let n = TICK_THROTTLE_DRAWS + 100_000 + i as u64 * 4;
        let len = between(seed, n + 1, 30_000, 120_000) as i64;
        let (a, b) = (end - 5_000, (end + len).min(to));
        if !chance(seed, n, 500) || a >= b || net.iter().any(|w| w.from_ms < b && a < w.to_ms) {
            continue;
        }
        let faults = Faults {
            throttle: between(seed, n + 2, 300, 700) as f64 / 1000.0,
            only_process: Some(TICK_PROCESS.into()),
            ..Faults::default()
        };
        net.push(NetWindow { from_ms: a, to_ms: b, faults });
    }
    net.extend(hot_buckets(seed, from, to, &net));
    net.sort_by_key(|w| w.from_ms);
    let mut kills = Vec::new();
    for w in 0..workers {
        for j in 0..between(seed, 80_000 + w as u64 * 64, 0, 4) {
            let n = 80_001 + w as u64 * 64 + j * 3;
            kills.push(Kill {
                at_ms: from + between(seed, n, 0, (to - from).max(1) as u64) as i64,
                worker: w,
                down_ms: between(seed, n + 1, 1_000, 20 * 60_000) as i64,
            });
        }
    }
    kills.sort_by_key(|k| (k.at_ms, k.worker));
    let stalls = stalls(seed, from, to, workers);
    let skews = (0..workers)
        .map(|w| {
            let n = 90_000 + w as u64;
            let mag = if chance(seed, n, 150) { 4_000 } else { 1_200 };
            between(seed, n + 1, 0, 2 * mag) as i64 - mag as i64
        })
        .collect();
    FaultPlan { tick_outages, reconciler_outages, net, kills, stalls, skews }
}

/// Each worker stalls 0 to 3 times, in the first 12 s of a minute (when the most fires run, so
/// the stall most likely freezes a run in progress): half the stalls for 40 to 150 s (it wakes
/// while the takeover of what it held may still run, and its late writes meet the new claim),
/// half for two to eight minutes.
fn stalls(seed: u64, from: i64, to: i64, workers: usize) -> Vec<Stall> {
    let mut out = Vec::new();
    for w in 0..workers {
        for j in 0..between(seed, 95_000 + w as u64 * 64, 0, 3) {
            let n = 95_001 + w as u64 * 64 + j * 4;
            let minute = (from + between(seed, n, 0, (to - from).max(1) as u64) as i64).div_euclid(60_000);
            out.push(Stall {
                at_ms: minute * 60_000 + between(seed, n + 1, 100, 12_000) as i64,
                worker: w,
                len_ms: if chance(seed, n + 2, 500) {
                    between(seed, n + 3, 40_000, 150_000)
                } else {
                    between(seed, n + 3, 120_000, 8 * 60_000)
                } as i64,
                wake_on_takeover: chance(seed, WAKE_DRAWS + w as u64 * 4 + j, 500),
            });
        }
    }
    out.sort_by_key(|s| (s.at_ms, s.worker));
    out
}
