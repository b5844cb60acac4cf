//! Resource limits (docs/resources.md): a job names the platform-wide resources its runs use,
//! and at most a resource's `limit` executions hold it at once, at most `perTenant` of them
//! one tenant's. The workload gives a quarter of the in-process jobs one or both of
//! [`LIMITS`] (own draw stream), set by an operator before the jobs are created.
//!
//! The promise, checked from the target's own invocations (start to end of each run's work):
//! at no instant do more runs of the jobs naming a resource run than its limit, nor more of one
//! tenant's than its share. A run taken over while it ran (a zombie's, superseded by a higher
//! token of the same execution) is not counted, and neither is a run whose worker was stalled or
//! killed meanwhile: its hold is a lease, which the next acquirer drops once it ends, so a
//! frozen holder's work may outlast it (a real limit cannot stop a partitioned process's own
//! work either; the fence stops its writes).

use crate::ledger::Invoked;
use crate::violation::Violation;
use std::collections::BTreeMap;

/// The resources the workload draws: (name, limit, `perTenant` as set; `None`: the default,
/// half the limit rounded up).
pub const LIMITS: [(&str, i64, Option<i64>); 2] = [("sim-db-a", 1, None), ("sim-db-b", 3, Some(2))];

/// The share of one tenant of a limit: as set, else half the limit rounded up, at least 1.
pub fn share(limit: i64, per_tenant: Option<i64>) -> i64 {
    per_tenant.unwrap_or((limit + 1) / 2).max(1)
}

/// A window in which a process (a name prefix) was stalled or killed: `[from, to)` (ms).
pub type Disruption = (String, i64, i64);

/// The runs that count against the limits (module doc).
fn counted<'a>(
    invocations: &'a [Invoked],
    uses: &BTreeMap<String, (String, Vec<String>)>,
    disrupted: &[Disruption],
) -> Vec<&'a Invoked> {
    invocations
        .iter()
        .filter(|r| r.end_ms > r.at_ms && uses.get(&r.execution).is_some_and(|(_, rs)| !rs.is_empty()))
        .filter(|r| {
            !invocations.iter().any(|o| o.execution == r.execution && o.token > r.token && o.at_ms < r.end_ms)
        })
        .filter(|r| {
            !disrupted
                .iter()
                .any(|(p, a, b)| r.process.starts_with(p.as_str()) && *a < r.end_ms && r.at_ms < *b)
        })
        .collect()
}

/// The `resources:` line of a run: the most runs seen holding each resource at once, against
/// its limit (empty when no job names one).
pub fn summary(
    invocations: &[Invoked],
    uses: &BTreeMap<String, (String, Vec<String>)>,
    disrupted: &[Disruption],
) -> String {
    if uses.is_empty() {
        return String::new();
    }
    let counted = counted(invocations, uses, disrupted);
    let parts: Vec<String> = LIMITS
        .iter()
        .map(|(name, limit, _)| {
            let runs: Vec<&&Invoked> = counted
                .iter()
                .filter(|r| uses.get(&r.execution).is_some_and(|(_, rs)| rs.iter().any(|x| x == name)))
                .collect();
            let most = runs
                .iter()
                .map(|r| runs.iter().filter(|o| o.at_ms <= r.at_ms && r.at_ms < o.end_ms).count())
                .max()
                .unwrap_or(0);
            format!("{name}: {} runs, at most {most} at once of {limit}", runs.len())
        })
        .collect();
    format!("resources: {}\n", parts.join("; "))
}

/// The resource-limit check (module doc). `uses`: each execution id's tenant and the
/// resources its own definition names.
pub fn check(
    invocations: &[Invoked],
    uses: &BTreeMap<String, (String, Vec<String>)>,
    disrupted: &[Disruption],
) -> Vec<Violation> {
    let counted = counted(invocations, uses, disrupted);
    let mut out = Vec::new();
    for (name, limit, per_tenant) in LIMITS {
        let runs: Vec<(&Invoked, &str)> = counted
            .iter()
            .filter_map(|r| {
                let (tenant, rs) = uses.get(&r.execution)?;
                rs.iter().any(|x| x == name).then_some((*r, tenant.as_str()))
            })
            .collect();
        let share = share(limit, per_tenant);
        // At each run's start, the runs going on then (itself included).
        for (r, tenant) in &runs {
            let during: Vec<&(&Invoked, &str)> =
                runs.iter().filter(|(o, _)| o.at_ms <= r.at_ms && r.at_ms < o.end_ms).collect();
            let mine = during.iter().filter(|(_, t)| t == tenant).count() as i64;
            let what = if during.len() as i64 > limit {
                format!("{} runs held {name} at once (limit {limit})", during.len())
            } else if mine > share {
                format!("{mine} runs of {tenant} held {name} at once (its share {share})")
            } else {
                continue;
            };
            let others: Vec<&str> = during.iter().map(|(o, _)| o.execution.as_str()).collect();
            out.push(Violation {
                invariant: "resource_limits",
                detail: format!("{what} at {}: {others:?}", crate::world::ms(r.at_ms)),
                execution: Some(r.execution.clone()),
            });
            break;
        }
    }
    out
}

/// The tenant running limit (docs/tenancy.md, "executions running at once"): at no instant do
/// more of `tenant`'s runs go on than `limit`, counted as [`check`] counts; with the most seen
/// at once. `tenant_of`: each execution id's tenant.
pub fn check_tenant(
    invocations: &[Invoked],
    tenant_of: &BTreeMap<String, String>,
    (tenant, limit): (&str, u32),
    disrupted: &[Disruption],
) -> (Vec<Violation>, usize) {
    let mine: BTreeMap<String, (String, Vec<String>)> = tenant_of
        .iter()
        .filter(|(_, t)| t.as_str() == tenant)
        .map(|(e, t)| (e.clone(), (t.clone(), vec![tenant.to_string()])))
        .collect();
    let runs = counted(invocations, &mine, disrupted);
    let mut most = 0;
    let mut out = Vec::new();
    for r in &runs {
        let during: Vec<&str> = runs
            .iter()
            .filter(|o| o.at_ms <= r.at_ms && r.at_ms < o.end_ms)
            .map(|o| o.execution.as_str())
            .collect();
        most = most.max(during.len());
        if during.len() > limit as usize && out.is_empty() {
            out.push(Violation {
                invariant: "tenant_limits",
                detail: format!(
                    "{} runs of {tenant} at once (its limit {limit}) at {}: {during:?}",
                    during.len(),
                    crate::world::ms(r.at_ms)
                ),
                execution: Some(r.execution.clone()),
            });
        }
    }
    (out, most)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(execution: &str, token: u64, process: &str, at_ms: i64, end_ms: i64) -> Invoked {
        Invoked { execution: execution.into(), token, attempt: 1, process: process.into(), at_ms, end_ms }
    }

    fn uses(list: &[(&str, &str, &[&str])]) -> BTreeMap<String, (String, Vec<String>)> {
        list.iter()
            .map(|(e, t, rs)| (e.to_string(), (t.to_string(), rs.iter().map(|r| r.to_string()).collect())))
            .collect()
    }

    #[test]
    fn a_second_run_of_a_limit_of_one_is_reported_a_zombies_is_not() {
        let u = uses(&[("a@1", "t0", &["sim-db-a"]), ("b@1", "t1", &["sim-db-a"])]);
        let one = [run("a@1", 1, "w0.0", 0, 100), run("b@1", 1, "w1.0", 100, 150)];
        assert!(check(&one, &u, &[]).is_empty(), "one after the other");
        let two = [run("a@1", 1, "w0.0", 0, 100), run("b@1", 1, "w1.0", 20, 100)];
        assert_eq!(check(&two, &u, &[])[0].invariant, "resource_limits");
        // a's worker was stalled meanwhile: its hold lapsed with its lease
        assert!(check(&two, &u, &[("w0.".into(), 50, 200)]).is_empty());
        // a was taken over (token 2) before its first run ended: the takeover is its run
        let taken = [run("a@1", 1, "w0.0", 0, 100), run("a@1", 2, "w3.0", 30, 40)];
        assert!(check(&taken, &u, &[]).is_empty());
    }

    #[test]
    fn a_tenant_past_its_running_limit_is_reported() {
        let tenants: BTreeMap<String, String> =
            [("a@1", "t0"), ("b@1", "t0"), ("c@1", "t1")].map(|(e, t)| (e.to_string(), t.to_string())).into();
        let runs =
            [run("a@1", 1, "w0.0", 0, 100), run("b@1", 1, "w1.0", 10, 100), run("c@1", 1, "w2.0", 20, 100)];
        let (v, most) = check_tenant(&runs, &tenants, ("t0", 1), &[]);
        assert_eq!((v[0].invariant, most), ("tenant_limits", 2));
        assert!(check_tenant(&runs, &tenants, ("t0", 2), &[]).0.is_empty());
        assert!(check_tenant(&runs, &tenants, ("t1", 1), &[]).0.is_empty());
    }

    #[test]
    fn one_tenant_past_its_share_is_reported() {
        // sim-db-b: limit 3, share 2
        let u =
            uses(&[("a@1", "t0", &["sim-db-b"]), ("b@1", "t0", &["sim-db-b"]), ("c@1", "t0", &["sim-db-b"])]);
        let runs =
            [run("a@1", 1, "w0.0", 0, 100), run("b@1", 1, "w1.0", 10, 100), run("c@1", 1, "w2.0", 20, 100)];
        assert!(check(&runs, &u, &[])[0].detail.contains("its share 2"));
        assert_eq!(share(2, None), 1);
        assert_eq!(share(3, Some(2)), 2);
    }
}
