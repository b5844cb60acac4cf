//! Time for the execution plane: an injectable [`Clock`], and a [`SkewGuard`] that checks the
//! worker's clock against the service's.
//!
//! DynamoDB has no server-side clock in conditions, so a lease is a timestamp written by one
//! worker and compared by another (docs/execution.md §3). Local clock skew would then decide
//! ownership. Sundial's rule:
//!
//! 1. Correctness never rests on the lease: every write of a running execution is conditional on
//!    its fencing token, so an early takeover costs duplicate work, never a stale result.
//! 2. A lease counts as expired only `skew_margin` after its end by the *taker's* clock, so two
//!    clocks each within `margin / 2` of true time never overlap leases.
//! 3. Each worker checks its own clock against the `Date` header of its DynamoDB responses (the
//!    service's clock, 1 s resolution). A worker whose clock is provably off by more than the
//!    allowed skew stops taking over leases ([`SkewGuard::trusted`]) and reports it, rather than
//!    let its clock decide another worker's lease.
//! 4. Every instant the worker writes or judges (lease ends, tenant gate entries, availability)
//!    is read from a [`ServiceClock`]: the local clock moved into the offset bounds of the latest
//!    `Date` header when it is provably outside them. Without it a worker 30 s slow writes leases
//!    that ended 28 s ago, and the first duplicate delivery takes its execution over at once
//!    while it still runs. What remains after the correction (under a second, the header's
//!    resolution) is what `skew_margin` covers.

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    BeforeDeserializationInterceptorContextRef, BeforeTransmitInterceptorContextRef,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::{ConfigBag, Storable, StoreReplace};
use chrono::{DateTime, Utc};
use std::fmt::Debug;
use std::sync::{Arc, Mutex};

/// Where the execution plane reads the time. Production uses [`SystemClock`]; the core's
/// functions take `now` from it once per step instead of calling `Utc::now()` deep inside.
pub trait Clock: Send + Sync + Debug {
    /// The current instant.
    fn now(&self) -> DateTime<Utc>;

    /// The current instant in ms since the epoch.
    fn now_ms(&self) -> i64 {
        self.now().timestamp_millis()
    }
}

/// The host clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}

/// Bounds on `service clock − local clock`, from one request/response pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetBounds {
    /// Lowest possible offset (ms).
    pub low: i64,
    /// Highest possible offset (ms).
    pub high: i64,
}

impl OffsetBounds {
    /// The offset interval implied by a response whose `Date` header says `date_secs`, for a
    /// request sent at local `sent_ms` and answered at local `received_ms`. The server stamped
    /// the header at some true instant in `[date, date + 1 s)` that the local clock saw somewhere
    /// in `[sent, received]`.
    pub fn from_exchange(sent_ms: i64, received_ms: i64, date_secs: i64) -> Self {
        let date_ms = date_secs * 1000;
        OffsetBounds { low: date_ms - received_ms, high: date_ms + 999 - sent_ms }
    }

    /// Whether the local clock is certainly more than `max_skew_ms` away from the service's.
    pub fn exceeds(&self, max_skew_ms: i64) -> bool {
        self.low > max_skew_ms || self.high < -max_skew_ms
    }

    /// What to add to the local clock to read the service's: nothing when the local clock is
    /// consistent with the exchange (a correct clock is left alone, not moved by the header's
    /// rounding), else the middle of the bounds (off by at most half their width, about 0.5 s).
    pub fn correction_ms(&self) -> i64 {
        if self.low <= 0 && 0 <= self.high {
            0
        } else {
            self.low + (self.high - self.low) / 2
        }
    }
}

/// Tracks the latest clock comparison with the service.
#[derive(Debug)]
pub struct SkewGuard {
    max_skew_ms: i64,
    last: Mutex<Option<OffsetBounds>>,
}

impl SkewGuard {
    /// A guard that distrusts the local clock when it is provably more than `max_skew_ms` off.
    pub fn new(max_skew_ms: i64) -> Self {
        SkewGuard { max_skew_ms, last: Mutex::new(None) }
    }

    /// Records one comparison.
    pub fn observe(&self, bounds: OffsetBounds) {
        if let Ok(mut g) = self.last.lock() {
            *g = Some(bounds);
        }
    }

    /// The latest comparison, if any.
    pub fn last(&self) -> Option<OffsetBounds> {
        self.last.lock().ok().and_then(|g| *g)
    }

    /// Whether this worker's clock may judge other workers' leases. Unknown (no response yet)
    /// counts as trusted: the first claim's own response is the first observation.
    pub fn trusted(&self) -> bool {
        !self.last().is_some_and(|b| b.exceeds(self.max_skew_ms))
    }

    /// What to add to the local clock to read the service's, from the latest comparison (0 while
    /// there is none).
    pub fn correction_ms(&self) -> i64 {
        self.last().map_or(0, |b| b.correction_ms())
    }
}

/// The service's time as this worker knows it: a local clock plus the correction its
/// [`SkewGuard`] measured. The worker reads every instant it writes or compares from it; the
/// probe that feeds the guard reads the local clock, so the correction never feeds on itself.
#[derive(Debug, Clone)]
pub struct ServiceClock {
    local: Arc<dyn Clock>,
    guard: Arc<SkewGuard>,
}

impl ServiceClock {
    /// `local`, corrected by what `guard` observes.
    pub fn new(local: Arc<dyn Clock>, guard: Arc<SkewGuard>) -> Self {
        ServiceClock { local, guard }
    }
}

impl Clock for ServiceClock {
    fn now(&self) -> DateTime<Utc> {
        self.local.now() + chrono::Duration::milliseconds(self.guard.correction_ms())
    }
}

/// Parses an HTTP `Date` header (IMF-fixdate, `Mon, 30 Nov 2026 02:36:20 GMT`) to epoch seconds.
pub fn parse_http_date(s: &str) -> Option<i64> {
    DateTime::parse_from_rfc2822(s).ok().map(|d| d.timestamp())
}

#[derive(Debug, Clone, Copy)]
struct SentAt(i64);

impl Storable for SentAt {
    type Storer = StoreReplace<Self>;
}

/// An SDK interceptor that feeds every response's `Date` header to a [`SkewGuard`].
#[derive(Debug, Clone)]
pub struct DateHeaderProbe {
    guard: Arc<SkewGuard>,
    clock: Arc<dyn Clock>,
}

impl DateHeaderProbe {
    /// A probe reporting to `guard`, reading local time from `clock`.
    pub fn new(guard: Arc<SkewGuard>, clock: Arc<dyn Clock>) -> Self {
        DateHeaderProbe { guard, clock }
    }
}

impl Intercept for DateHeaderProbe {
    fn name(&self) -> &'static str {
        "SundialDateHeaderProbe"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        cfg.interceptor_state().store_put(SentAt(self.clock.now_ms()));
        Ok(())
    }

    fn read_after_transmit(
        &self,
        context: &BeforeDeserializationInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let received = self.clock.now_ms();
        let date = context.response().headers().get("date").and_then(parse_http_date);
        if let (Some(SentAt(sent)), Some(date)) = (cfg.load::<SentAt>(), date) {
            self.guard.observe(OffsetBounds::from_exchange(*sent, received, date));
        }
        Ok(())
    }
}

/// A copy of `ddb` whose responses feed `guard`.
pub fn with_skew_probe(
    ddb: &aws_sdk_dynamodb::Client,
    guard: Arc<SkewGuard>,
    clock: Arc<dyn Clock>,
) -> aws_sdk_dynamodb::Client {
    let conf = ddb.config().to_builder().interceptor(DateHeaderProbe::new(guard, clock)).build();
    aws_sdk_dynamodb::Client::from_conf(conf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_matching_clock_is_trusted_and_a_skewed_one_is_not() {
        // GIVEN a request sent at local 10.000 s, answered at 10.050 s, Date says 10 s
        let b = OffsetBounds::from_exchange(10_000, 10_050, 10);
        assert_eq!(b, OffsetBounds { low: -50, high: 999 });
        assert!(!b.exceeds(1_000));
        // GIVEN the local clock runs 5 s fast: Date says 5 s while we read 10 s
        let fast = OffsetBounds::from_exchange(10_000, 10_050, 5);
        assert!(fast.exceeds(1_000));
        // GIVEN it runs 3 s slow
        let slow = OffsetBounds::from_exchange(10_000, 10_050, 13);
        assert!(slow.exceeds(1_000));
        let g = SkewGuard::new(1_000);
        assert!(g.trusted(), "unknown counts as trusted");
        g.observe(fast);
        assert!(!g.trusted());
        g.observe(b);
        assert!(g.trusted());
    }

    #[test]
    fn a_skewed_clock_is_corrected_into_the_bounds_and_a_right_one_is_left_alone() {
        // GIVEN a local clock reading 10.000 s at the exchange
        #[derive(Debug)]
        struct At(i64);
        impl Clock for At {
            fn now(&self) -> DateTime<Utc> {
                DateTime::from_timestamp_millis(self.0).unwrap_or_default()
            }
        }
        let guard = Arc::new(SkewGuard::new(1_000));
        let clock = ServiceClock::new(Arc::new(At(10_000)), guard.clone());
        assert_eq!(clock.now_ms(), 10_000, "nothing observed: the local clock");
        // WHEN the service's Date says 10 s (consistent): no correction
        guard.observe(OffsetBounds::from_exchange(10_000, 10_050, 10));
        assert_eq!(clock.now_ms(), 10_000);
        // WHEN it says 40 s (the local clock runs 30 s slow): read as ~40.5 s, inside [39.95, 40.999]
        guard.observe(OffsetBounds::from_exchange(10_000, 10_050, 40));
        assert_eq!(clock.now_ms(), 40_474);
        // WHEN it says 5 s (5 s fast): read inside [4.95, 5.999]
        guard.observe(OffsetBounds::from_exchange(10_000, 10_050, 5));
        assert_eq!(clock.now_ms(), 5_474);
    }

    #[test]
    fn a_one_second_header_cannot_prove_sub_second_skew() {
        // 900 ms fast is within what a 1-s-resolution header can explain.
        assert!(!OffsetBounds::from_exchange(10_900, 10_950, 10).exceeds(1_000));
    }

    #[test]
    fn http_dates_parse() {
        assert_eq!(parse_http_date("Mon, 30 Nov 2026 02:36:20 GMT"), Some(1_796_006_180));
        assert_eq!(parse_http_date("yesterday"), None);
    }
}
