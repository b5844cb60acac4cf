//! The claim protocol's model, explored exhaustively (see `sundial_chaos::model`).

use sundial_chaos::model::{explore, Bounds, Exploration, Flaw};

fn report(name: &str, b: &Bounds, e: &Exploration) {
    println!(
        "model {name}: {} states, {} transitions explored ({b:?}); {} SUCCEEDED, {} DEAD states, max token {}",
        e.states, e.transitions, e.succeeded_states, e.dead_states, e.max_token
    );
}

#[test]
fn three_workers_with_crashes_pauses_and_a_duplicate_message_are_safe_and_live() {
    // GIVEN one execution, two messages for it (a duplicate tick), three workers, two crashes
    // and one pause past the lease, a handler that may succeed or fail retryably
    let b = Bounds { workers: 3, max_attempts: 3, crashes: 3, pauses: 2, messages: 2, may_succeed: true };
    // WHEN every interleaving is explored
    let e = explore(&b, Flaw::None);
    report("3 workers", &b, &e);
    // THEN no state breaks a safety property and a final state is reachable from every state
    assert_eq!(e.safety, None, "{}", e.safety.as_ref().map(ToString::to_string).unwrap_or_default());
    assert_eq!(e.liveness, None, "{}", e.liveness.as_ref().map(ToString::to_string).unwrap_or_default());
    // AND both outcomes occur, and takeovers happened (tokens beyond the attempts)
    assert!(e.succeeded_states > 0 && e.dead_states > 0);
    assert!(e.max_token > u64::from(b.max_attempts), "max token {}", e.max_token);
}

#[test]
fn an_execution_whose_workers_keep_crashing_still_ends_dead() {
    // GIVEN a handler that never succeeds and more crashes than attempts
    let b = Bounds { workers: 2, max_attempts: 2, crashes: 4, pauses: 2, messages: 1, may_succeed: false };
    // WHEN explored
    let e = explore(&b, Flaw::None);
    report("crash loop", &b, &e);
    // THEN it always can (and under fairness must) end DEAD, never SUCCEEDED
    assert_eq!(e.safety, None, "{}", e.safety.as_ref().map(ToString::to_string).unwrap_or_default());
    assert_eq!(e.liveness, None, "{}", e.liveness.as_ref().map(ToString::to_string).unwrap_or_default());
    assert_eq!(e.succeeded_states, 0);
    assert!(e.dead_states > 0);
}

const FLAWED: Bounds =
    Bounds { workers: 2, max_attempts: 2, crashes: 1, pauses: 1, messages: 1, may_succeed: true };

#[test]
fn a_finish_without_the_token_condition_is_caught() {
    // GIVEN a protocol whose finish only checks st = RUNNING
    let e = explore(&FLAWED, Flaw::FinishIgnoresToken);
    // THEN the explorer finds a stale finish accepted, with its trace
    let v = e.safety.unwrap_or_else(|| panic!("no violation found in {} states", e.states));
    println!("found: {v}");
    assert!(v.property.contains("stale token") || v.property.contains("two accepted"), "{v}");
    assert!(v.trace.iter().any(|a| matches!(a, sundial_chaos::model::Action::Expire)), "{v}");
}

#[test]
fn deleting_the_message_on_a_refused_claim_is_caught() {
    let e = explore(&FLAWED, Flaw::DeleteOnRefusedClaim);
    let v = e.safety.unwrap_or_else(|| panic!("no violation found in {} states", e.states));
    println!("found: {v}");
    assert!(v.property.contains("no message left"), "{v}");
}

#[test]
fn never_taking_over_an_expired_lease_is_caught_as_a_liveness_failure() {
    let e = explore(&FLAWED, Flaw::NoTakeover);
    assert_eq!(e.safety, None, "fencing alone keeps it safe");
    let v = e.liveness.unwrap_or_else(|| panic!("no liveness violation found in {} states", e.states));
    println!("found: {v}");
    assert!(v.trace.iter().any(|a| matches!(a, sundial_chaos::model::Action::Crash(_))), "{v}");
}
