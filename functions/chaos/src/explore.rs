//! One breadth-first explorer for the finite models of this crate ([`model`](super::model), the
//! claim protocol, and [`trigger_model`](super::trigger_model), the trigger plane).
//!
//! Why one: both models are checked the same way, and the subtle parts (a trace must be the
//! shortest one, a safety violation must be the first one met in breadth-first order, liveness
//! must be judged on the whole graph) are easier to get right once. A model says what its states
//! are, how they move and what must hold; [`explore`] does the rest:
//!
//! - **Search**: every state reachable from [`Model::initial_states`] through
//!   [`Model::successors`], each stored once, numbered in discovery (breadth-first) order, with
//!   the action and predecessor of its first discovery. A trace rebuilt from those is a shortest
//!   path from an initial state.
//! - **Safety**: [`Model::invariant`] on every newly discovered state, and a successor's own
//!   [`Step::broken`] on every transition (properties of a move, not of a state: "this write
//!   carried a stale token"). The first violation met is kept, with its shortest trace; the
//!   search goes on, so the statistics always cover the whole graph.
//! - **Noted properties**: [`Model::noted`] on every newly discovered state: findings that are
//!   reported but are not violations (a documented limit of the protocol). The first state of
//!   each kind is kept, with its shortest trace.
//! - **Liveness** as `AG EF done`: from every reachable state a [`Model::done`] state must be
//!   reachable (backward reachability from the done states over the reversed edges). On a
//!   finite graph whose faults are bounded this is `AF done` under strong fairness. The first
//!   state (in discovery order) that cannot reach a done state is reported with its shortest
//!   trace, continued, when the model ranks dead ends ([`Model::dead_end`]), by the shortest
//!   path to the reachable dead end of lowest rank: the counterexample then ends where the
//!   missing obligation can be named.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::Hash;

/// A finite transition system to explore.
pub trait Model {
    /// A whole-system state (every history variable the properties need included).
    type State: Clone + Eq + Hash;
    /// A transition's label, for traces.
    type Action: Copy;

    /// Where every behaviour starts.
    fn initial_states(&self) -> Vec<Self::State>;

    /// Every transition out of `s`, in a fixed order (the order decides which of several
    /// shortest traces is reported).
    fn successors(&self, s: &Self::State) -> Vec<Step<Self::State, Self::Action>>;

    /// A safety property `s` breaks, if any.
    fn invariant(&self, s: &Self::State) -> Option<String>;

    /// Findings in `s` that are reported apart, not as violations, keyed by kind (the explorer
    /// keeps the first state of each kind).
    fn noted(&self, _s: &Self::State) -> Vec<(u8, String)> {
        Vec::new()
    }

    /// A good end state: liveness asks that one stays reachable from every state.
    fn done(&self, s: &Self::State) -> bool;

    /// For liveness counterexamples: the rank of a dead end (a state where behaviours end
    /// without being done) to continue the trace to; lower is preferred, `None` is no dead end.
    fn dead_end(&self, _s: &Self::State) -> Option<usize> {
        None
    }
}

/// One transition out of a state.
#[derive(Debug, Clone)]
pub struct Step<S, A> {
    /// Its label.
    pub action: A,
    /// The state it leads to.
    pub next: S,
    /// A safety property the transition itself breaks.
    pub broken: Option<String>,
}

impl<S, A> Step<S, A> {
    /// A transition that breaks nothing by itself.
    pub fn to(action: A, next: S) -> Self {
        Step { action, next, broken: None }
    }
}

/// A property that failed, and how to get there from an initial state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation<A> {
    /// Which property.
    pub property: String,
    /// The actions from the initial state.
    pub trace: Vec<A>,
}

impl<A: fmt::Display> fmt::Display for Violation<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} after [", self.property)?;
        for (i, a) in self.trace.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{a}")?;
        }
        f.write_str("]")
    }
}

/// A state from which no done state is reachable.
#[derive(Debug, Clone)]
pub struct Doomed<A> {
    /// Its index in [`Explored::states`].
    pub state: usize,
    /// The shortest trace to it.
    pub trace: Vec<A>,
    /// The reachable dead end of lowest rank (the nearest among those), if the model ranks any.
    pub end: Option<DeadEnd<A>>,
}

/// Where a liveness counterexample is continued to.
#[derive(Debug, Clone)]
pub struct DeadEnd<A> {
    /// Its index in [`Explored::states`].
    pub state: usize,
    /// Its rank ([`Model::dead_end`]).
    pub rank: usize,
    /// The shortest path to it from the doomed state.
    pub tail: Vec<A>,
}

/// What [`explore`] found: the whole reachable graph's states and the properties' verdicts.
#[derive(Debug, Clone)]
pub struct Explored<S, A> {
    /// Every reachable state, in discovery order.
    pub states: Vec<S>,
    /// Transitions between them.
    pub transitions: usize,
    /// Reachable done states.
    pub done_states: usize,
    /// The first safety violation met, with its shortest trace.
    pub safety: Option<Violation<A>>,
    /// For each kind of [`Model::noted`] finding met, in key order: the first, with its
    /// shortest trace.
    pub noted: Vec<Violation<A>>,
    /// The first state from which no done state is reachable.
    pub liveness: Option<Doomed<A>>,
}

/// How a state was first reached: from which state by which action (`None`: a start).
type Arrival<A> = Option<(u32, A)>;

/// The reachable graph, as the search leaves it.
struct Graph<S, A> {
    states: Vec<S>,
    /// The predecessor and action of each state's first discovery (`None`: an initial state).
    parent: Vec<Arrival<A>>,
    /// Each state's outgoing transitions, in successor order.
    edges: Vec<Vec<(u32, A)>>,
    transitions: usize,
}

impl<S, A: Copy> Graph<S, A> {
    /// The actions of the shortest path from an initial state to state `i`.
    fn trace(&self, mut i: u32) -> Vec<A> {
        let mut t = Vec::new();
        while let Some((p, a)) = self.parent[i as usize] {
            t.push(a);
            i = p;
        }
        t.reverse();
        t
    }
}

/// The verdicts gathered during the search.
struct Findings<A> {
    safety: Option<Violation<A>>,
    noted: Vec<(u8, Violation<A>)>,
}

/// Explores every reachable state of `m`: safety and noted properties on the way, liveness at
/// the end (see the module docs).
pub fn explore<M: Model>(m: &M) -> Explored<M::State, M::Action> {
    // The state index is dropped here: liveness needs only the graph.
    let Search { graph, found, .. } = search(m);
    let (done_states, liveness) = liveness(m, &graph);
    let mut noted = found.noted;
    noted.sort_by_key(|x| x.0);
    Explored {
        transitions: graph.transitions,
        states: graph.states,
        done_states,
        safety: found.safety,
        noted: noted.into_iter().map(|x| x.1).collect(),
        liveness,
    }
}

fn index_of(i: usize) -> u32 {
    u32::try_from(i).expect("more than u32::MAX states")
}

/// The search in progress: the graph so far, the lookup from state to index, the verdicts.
struct Search<'m, M: Model> {
    model: &'m M,
    graph: Graph<M::State, M::Action>,
    index: HashMap<M::State, u32>,
    found: Findings<M::Action>,
    queue: VecDeque<u32>,
}

impl<M: Model> Search<'_, M> {
    /// Records a newly discovered state, queues it and checks it (its trace is already known).
    fn discover(&mut self, s: M::State, parent: Arrival<M::Action>) -> u32 {
        let g = &mut self.graph;
        let j = index_of(g.states.len());
        let broken = if self.found.safety.is_none() { self.model.invariant(&s) } else { None };
        let noted = self.model.noted(&s);
        self.index.insert(s.clone(), j);
        g.states.push(s);
        g.parent.push(parent);
        g.edges.push(Vec::new());
        self.queue.push_back(j);
        if let Some(property) = broken {
            self.found.safety = Some(Violation { property, trace: g.trace(j) });
        }
        for (kind, property) in noted {
            if !self.found.noted.iter().any(|x| x.0 == kind) {
                self.found.noted.push((kind, Violation { property, trace: g.trace(j) }));
            }
        }
        j
    }

    /// Follows every transition out of state `i`.
    fn expand(&mut self, i: u32) {
        for step in self.model.successors(&self.graph.states[i as usize]) {
            self.graph.transitions += 1;
            if self.found.safety.is_none() {
                if let Some(property) = step.broken {
                    let mut trace = self.graph.trace(i);
                    trace.push(step.action);
                    self.found.safety = Some(Violation { property, trace });
                }
            }
            let j = match self.index.get(&step.next) {
                Some(&j) => j,
                None => self.discover(step.next, Some((i, step.action))),
            };
            self.graph.edges[i as usize].push((j, step.action));
        }
    }
}

/// The breadth-first search over the whole graph, with the safety and noted checks of each
/// state at its discovery and of each transition.
fn search<M: Model>(m: &M) -> Search<'_, M> {
    let mut s = Search {
        model: m,
        graph: Graph { states: Vec::new(), parent: Vec::new(), edges: Vec::new(), transitions: 0 },
        index: HashMap::new(),
        found: Findings { safety: None, noted: Vec::new() },
        queue: VecDeque::new(),
    };
    for init in m.initial_states() {
        if !s.index.contains_key(&init) {
            s.discover(init, None);
        }
    }
    while let Some(i) = s.queue.pop_front() {
        s.expand(i);
    }
    s
}

/// Backward reachability from the done states over the reversed edges: the number of done
/// states, and the first state that cannot reach one.
fn liveness<M: Model>(m: &M, g: &Graph<M::State, M::Action>) -> (usize, Option<Doomed<M::Action>>) {
    let n = g.states.len();
    let mut rev: Vec<Vec<u32>> = vec![Vec::new(); n];
    for (i, out) in g.edges.iter().enumerate() {
        for &(j, _) in out {
            rev[j as usize].push(index_of(i));
        }
    }
    let mut good = vec![false; n];
    let mut work: Vec<u32> = (0..n).filter(|&i| m.done(&g.states[i])).map(index_of).collect();
    let done_states = work.len();
    for &i in &work {
        good[i as usize] = true;
    }
    while let Some(j) = work.pop() {
        for &i in &rev[j as usize] {
            if !good[i as usize] {
                good[i as usize] = true;
                work.push(i);
            }
        }
    }
    let doomed = good.iter().position(|g| !g).map(|i| Doomed {
        state: i,
        trace: g.trace(index_of(i)),
        end: nearest_dead_end(m, g, index_of(i)),
    });
    (done_states, doomed)
}

/// A breadth-first search forward from `from` for the reachable dead end of lowest rank (the
/// first met among those), and the shortest path to it.
fn nearest_dead_end<M: Model>(
    m: &M,
    g: &Graph<M::State, M::Action>,
    from: u32,
) -> Option<DeadEnd<M::Action>> {
    let mut seen: Vec<Option<Arrival<M::Action>>> = vec![None; g.states.len()];
    let mut q = VecDeque::from([from]);
    seen[from as usize] = Some(None);
    let mut best: Option<(usize, u32)> = None;
    while let Some(k) = q.pop_front() {
        if let Some(rank) = m.dead_end(&g.states[k as usize]) {
            if best.is_none_or(|(r, _)| rank < r) {
                best = Some((rank, k));
            }
        }
        for &(n, a) in &g.edges[k as usize] {
            if seen[n as usize].is_none() {
                seen[n as usize] = Some(Some((k, a)));
                q.push_back(n);
            }
        }
    }
    let (rank, state) = best?;
    let mut tail = Vec::new();
    let mut c = state;
    while let Some(Some((p, a))) = seen[c as usize] {
        tail.push(a);
        c = p;
    }
    tail.reverse();
    Some(DeadEnd { state: state as usize, rank, tail })
}
